//! `list`: one keyset page of a queue's messages in id order, filtered ([`ListArgs`]), read from
//! the store's id-ordered page read ([`crate::Store::list`]) by a [`Scan`] that examines at most
//! [`SCAN_BUDGET`] messages per call, so that a filter no index answers (`payload_contains`)
//! costs a bounded amount per page however large the queue is.

use crate::arg::Arg;
use crate::error::Result;
use crate::message::{Id, Message, Millis};
use crate::store::ListQuery;
use crate::validate::{Check, DEFAULT_LIST_LIMIT, LIST_LIMIT_RANGE};

use super::filters::{FilterArgs, Selection};

/// The most messages one `list` call examines (reads from the store and gives to
/// [`crate::Filter::matches`]) when filters beyond `status` are set (issue 22: "searching
/// payloads may scan; it stays bounded per page"). When it runs out first, the page may be short,
/// even empty, and [`Page::next_after_id`] says where to go on.
pub const SCAN_BUDGET: usize = 10_000;

/// The fewest messages a filtered `list` reads from the store at once (a page of `limit` when
/// `limit` is larger): a search for one message does not read the store one message at a time.
pub const SCAN_PAGE: usize = 100;

/// One page of `list`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    /// The messages selected, in id order, at most the call's `limit`.
    pub messages: Vec<Message>,
    /// The id to pass as `after_id` to continue: the last returned id when the page is full, the
    /// last examined id when [`SCAN_BUDGET`] ran out before the page filled (more may match
    /// beyond); `None` when the read reached the end of the queue before the page filled.
    pub next_after_id: Option<Id>,
}

/// `list`: the messages of `queue` that the filters select, ids above `after_id`, at most
/// `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListArgs {
    /// The queue.
    pub queue: String,
    /// The filters.
    pub selection: Selection,
    /// Page size, 1..=1000.
    pub limit: usize,
    /// Only ids greater than this, when set.
    pub after_id: Option<Id>,
}

impl ListArgs {
    /// Checks `queue`, the filters (any status; see [`Selection`]), `limit` (1..=1000, default
    /// 100) and `after_id` (>= 0, optional); every rejected field is reported together, in this
    /// order.
    pub fn new(
        queue: &Arg<'_>,
        filters: &FilterArgs<'_>,
        limit: &Arg<'_>,
        after_id: &Arg<'_>,
    ) -> Result<Self> {
        let mut check = Check::default();
        let queue = check.queue(queue);
        let selection = Selection::check(&mut check, filters, None);
        let limit = check.int("limit", limit, LIST_LIMIT_RANGE, Some(DEFAULT_LIST_LIMIT));
        let after_id = check.opt_int("after_id", after_id, (0, i64::MAX));
        check.finish(|| Self {
            queue: queue.unwrap_or_default().to_owned(),
            selection: selection.unwrap_or_default(),
            limit: limit
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or_default(),
            after_id,
        })
    }

    /// Whether the filters depend on the instant (`delayed`): only then does `list` read the
    /// clock.
    pub fn needs_clock(&self) -> bool {
        self.selection.delayed.is_some()
    }
}

/// The reads of one `list` call, sans I/O: while [`Scan::next`] names a page, the store reads it
/// ([`crate::Store::list`]) and hands it to [`Scan::feed`]; [`Scan::finish`] is the answer.
/// Without a filter beyond the status that is one read of `limit`; with one, pages of at least
/// [`SCAN_PAGE`] until the page is full, the queue has no more, or [`SCAN_BUDGET`] messages were
/// examined.
#[derive(Debug, Clone, PartialEq)]
pub struct Scan {
    args: ListArgs,
    now: Millis,
    found: Vec<Message>,
    /// The last id examined (where the next read starts).
    after: Option<Id>,
    /// How many more messages it may examine.
    budget: usize,
    /// The store has no more messages past `after`.
    over: bool,
}

impl Scan {
    /// The scan of `args` at `now` (the instant `delayed` is judged at; any value when
    /// [`ListArgs::needs_clock`] is false).
    pub fn new(args: ListArgs, now: Millis) -> Self {
        let after = args.after_id;
        Self {
            args,
            now,
            found: Vec::new(),
            after,
            budget: SCAN_BUDGET,
            over: false,
        }
    }

    fn full(&self) -> bool {
        self.found.len() >= self.args.limit
    }

    /// The next page to read, or `None` when the scan is over.
    pub fn next(&self) -> Option<ListQuery<'_>> {
        if self.over || self.full() || self.budget == 0 {
            return None;
        }
        let limit = if self.args.selection.scans() {
            self.args.limit.max(SCAN_PAGE).min(self.budget)
        } else {
            self.args.limit
        };
        Some(ListQuery {
            queue: &self.args.queue,
            status: self.args.selection.read_status(),
            limit,
            after_id: self.after,
        })
    }

    /// The page the store read for the last [`Scan::next`] (ids ascending, at most its `limit`).
    pub fn feed(&mut self, page: Vec<Message>) {
        let asked = self.next().map_or(0, |q| q.limit);
        self.over = page.len() < asked || !self.args.selection.scans();
        let filter = self.args.selection.filter(&self.args.queue, self.now);
        for message in page {
            if self.full() || self.budget == 0 {
                // Not examined: the next call reads it again.
                self.over = false;
                break;
            }
            self.budget -= 1;
            self.after = Some(message.id);
            if filter.matches(&message) {
                self.found.push(message);
            }
        }
    }

    /// The page: the messages found and where to go on.
    pub fn finish(self) -> Page {
        let next_after_id = if self.full() {
            self.found.last().map(|m| m.id)
        } else if self.over {
            None
        } else {
            self.after
        };
        Page {
            messages: self.found,
            next_after_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewMessage, Status};

    fn message(id: Id, payload: &str) -> Message {
        NewMessage {
            queue: "q".into(),
            payload: payload.into(),
            max_retries: 3,
            idempotency_key: None,
            retry_after: None,
            group: None,
            expires_at: None,
            now: 0,
        }
        .with_id(id)
    }

    /// Runs a scan over `stored` (a queue's messages, ids ascending) as a store would.
    fn run(args: ListArgs, budget: usize, stored: &[Message]) -> (Page, Vec<(Option<Id>, usize)>) {
        let mut scan = Scan::new(args, 0);
        scan.budget = budget;
        let mut reads = Vec::new();
        while let Some(query) = scan.next() {
            reads.push((query.after_id, query.limit));
            let after = query.after_id.unwrap_or(0);
            let page: Vec<Message> = stored
                .iter()
                .filter(|m| m.id > after && query.status.is_none_or(|s| s == m.status))
                .take(query.limit)
                .cloned()
                .collect();
            scan.feed(page);
        }
        (scan.finish(), reads)
    }

    fn args(payload_contains: Option<&str>, limit: i64, after_id: Option<i64>) -> ListArgs {
        let filters = FilterArgs {
            payload_contains: payload_contains.into(),
            ..FilterArgs::default()
        };
        ListArgs::new(&"q".into(), &filters, &Arg::Int(limit), &after_id.into()).unwrap()
    }

    fn ids(page: &Page) -> Vec<Id> {
        page.messages.iter().map(|m| m.id).collect()
    }

    #[test]
    fn without_filters_one_read_of_limit_answers() {
        let stored: Vec<Message> = (1..=5).map(|id| message(id, "x")).collect();
        let (page, reads) = run(args(None, 5, None), SCAN_BUDGET, &stored);
        assert_eq!(
            (ids(&page), page.next_after_id),
            (vec![1, 2, 3, 4, 5], Some(5))
        );
        assert_eq!(reads, [(None, 5)]);
        let (page, reads) = run(args(None, 3, Some(3)), SCAN_BUDGET, &stored);
        assert_eq!((ids(&page), page.next_after_id), (vec![4, 5], None));
        assert_eq!(reads, [(Some(3), 3)]);
    }

    #[test]
    fn a_budget_that_runs_out_gives_the_last_examined_id() {
        // Matches at 3 and 9 of 1..=10; a budget of 4 reads 1..=4 and stops short.
        let stored: Vec<Message> = (1..=10)
            .map(|id| message(id, if id % 6 == 3 { "match" } else { "other" }))
            .collect();
        let (page, reads) = run(args(Some("match"), 2, None), 4, &stored);
        assert_eq!((ids(&page), page.next_after_id), (vec![3], Some(4)));
        assert_eq!(reads, [(None, 4)]);
        // Going on from there finds the second match and the end of the queue.
        let (page, _) = run(args(Some("match"), 2, Some(4)), 4, &stored);
        assert_eq!((ids(&page), page.next_after_id), (vec![], Some(8)));
        let (page, _) = run(args(Some("match"), 2, Some(8)), 4, &stored);
        assert_eq!((ids(&page), page.next_after_id), (vec![9], None));
        // A budget that runs out exactly at the last message: the end is not known yet.
        let (page, _) = run(args(Some("match"), 5, Some(6)), 4, &stored);
        assert_eq!((ids(&page), page.next_after_id), (vec![9], Some(10)));
    }

    #[test]
    fn a_filtered_page_reads_in_pages_of_at_least_scan_page() {
        let stored: Vec<Message> = (1..=250)
            .map(|id| message(id, if id > 240 { "match" } else { "other" }))
            .collect();
        let (page, reads) = run(args(Some("match"), 3, None), SCAN_BUDGET, &stored);
        assert_eq!(
            (ids(&page), page.next_after_id),
            (vec![241, 242, 243], Some(243))
        );
        assert_eq!(reads, [(None, 100), (Some(100), 100), (Some(200), 100)]);
        // The page filled in the middle of a read: the rest was not examined.
        let (page, _) = run(args(Some("match"), 3, Some(243)), SCAN_BUDGET, &stored);
        assert_eq!(
            (ids(&page), page.next_after_id),
            (vec![244, 245, 246], Some(246))
        );
    }

    #[test]
    fn delayed_reads_the_pending_messages_only() {
        let filters = FilterArgs {
            delayed: Arg::Bool(true),
            ..FilterArgs::default()
        };
        let list = ListArgs::new(&"q".into(), &filters, &Arg::Null, &Arg::Null).unwrap();
        assert!(list.needs_clock());
        let scan = Scan::new(list, 0);
        assert_eq!(
            scan.next().map(|q| (q.status, q.limit)),
            Some((Some(Status::Pending), 100))
        );
    }
}
