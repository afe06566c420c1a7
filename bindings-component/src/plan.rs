//! The interface `plan`: the plans of a store that keeps its messages in a plain map and finds
//! them by looking (`deadletter::engine::scan`), the reads of a filtered `list`
//! (`deadletter::engine::Scan`) and the batches of the bulk operations (`deadletter::Batches`).

use std::cell::{Cell, RefCell};

use deadletter::engine::{Scan, scan};
use deadletter::{Batches, ClaimArgs, Context, Id, Millis, Stats};

use crate::Component;
use crate::convert::messages;
use crate::wit::plan::{Claimed, GuestBatches, GuestScan};
use crate::wit::types as w;

fn stored(list: Vec<w::Stored>) -> Vec<scan::Stored> {
    list.into_iter().map(Into::into).collect()
}

/// One claim at `ctx` over the queue's stored messages; see the WIT interface.
fn claim(
    args: &ClaimArgs,
    ctx: &Context,
    queue: Vec<w::Stored>,
    tokens: Vec<String>,
) -> deadletter::Result<Claimed> {
    deadletter::validate::lease_tokens(&tokens, args.n)?;
    let Some(claiming) = args.start(ctx) else {
        return Ok(Claimed {
            changes: Vec::new(),
            row: None,
            taken: Vec::new(),
            reaped: 0,
            dead: Vec::new(),
        });
    };
    let mut tokens = tokens.into_iter();
    let done = scan::claim(&claiming, &args.queue, ctx.queue, stored(queue), || {
        tokens.next().unwrap_or_default()
    })?;
    let claimed = done.claimed;
    Ok(Claimed {
        changes: done.changes.into_iter().map(Into::into).collect(),
        row: done.row.map(Into::into),
        reaped: claimed.reaped(),
        dead: messages(claimed.dead()),
        taken: messages(claimed.taken),
    })
}

impl crate::wit::plan::Guest for Component {
    type Batches = BulkBatches;
    type Scan = ListScan;

    fn claim(
        args: w::ClaimArgs,
        ctx: w::Context,
        queue: Vec<w::Stored>,
        tokens: Vec<String>,
    ) -> Result<Claimed, w::Error> {
        claim(&args.into(), &ctx.into(), queue, tokens).map_err(Into::into)
    }

    fn place(
        now: Millis,
        before: Option<w::Stored>,
        after: w::Message,
        group: Vec<w::Stored>,
    ) -> w::Stored {
        let before: Option<scan::Stored> = before.map(Into::into);
        scan::place(now, before.as_ref(), after.into(), &stored(group)).into()
    }

    fn queue_stats(
        queue: String,
        messages: Vec<w::Stored>,
        row: Option<w::QueueRow>,
        now: Millis,
    ) -> w::Stats {
        let counts = scan::counts(&stored(messages), &crate::convert::row(row), now);
        Stats::new(&queue, &counts, now).into()
    }

    fn next_due_at(messages: Vec<w::Stored>, now: Millis) -> Option<Millis> {
        scan::next_due_at(&stored(messages), now)
    }
}

/// The resource `scan`: the core's [`Scan`], the reads of one `list`.
pub struct ListScan(RefCell<Scan>);

impl GuestScan for ListScan {
    fn new(args: w::ListArgs, now: Millis) -> Self {
        Self(RefCell::new(Scan::new(args.into(), now)))
    }

    fn next(&self) -> Option<w::ListQuery> {
        self.0.borrow().next().map(Into::into)
    }

    fn feed(&self, messages: Vec<w::Message>) {
        let page = messages.into_iter().map(Into::into).collect();
        self.0.borrow_mut().feed(page);
    }

    fn finish(scan: crate::wit::plan::Scan) -> w::Page {
        scan.into_inner::<Self>().0.into_inner().finish().into()
    }
}

/// The resource `batches`: the core's [`Batches`].
pub struct BulkBatches(Cell<Batches>);

impl GuestBatches for BulkBatches {
    fn new(limit: u64) -> Self {
        Self(Cell::new(Batches::new(limit)))
    }

    fn next(&self) -> Option<(Id, u32)> {
        let (after, room) = self.0.get().next()?;
        // At most BATCH (200).
        Some((after, u32::try_from(room).unwrap_or(u32::MAX)))
    }

    fn record(&self, ids: Vec<Id>, applied: u64) {
        let mut batches = self.0.get();
        batches.record(&ids, applied);
        self.0.set(batches);
    }

    fn done(&self) -> u64 {
        self.0.get().done()
    }
}
