//! `Queue.claim`, `Queue.claimMany` and `Queue.reap` ([`ClaimPlan`]): the core's
//! [`LaneClaim`] over the `claim` index of the IndexedDB store, with the lease tokens drawn for it.

use deadletter::{ClaimArgs, Context, Error, LaneClaim, Outcome, Result, Write};
use js_sys::{Array, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::keys;
use crate::names::uuid_v4;
use crate::plans::{count, messages, outcome, read_all};
use crate::record::{from_record, to_ready_record, to_record};
use crate::rules::js;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = crypto, js_name = getRandomValues, catch)]
    fn get_random_values(buffer: &Uint8Array) -> std::result::Result<JsValue, JsValue>;
}

/// `count` fresh lease tokens: version-4 UUIDs from one call of `crypto.getRandomValues`.
fn lease_tokens(count: usize) -> Result<Vec<String>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let buffer = Uint8Array::new_with_length(u32::try_from(16 * count).unwrap_or(u32::MAX));
    get_random_values(&buffer).map_err(|_| Error::Store("crypto.getRandomValues failed".into()))?;
    let bytes = buffer.to_vec();
    Ok(bytes
        .chunks_exact(16)
        .map(|chunk| {
            let mut token = [0u8; 16];
            token.copy_from_slice(chunk);
            uuid_v4(token)
        })
        .collect())
}

/// The records of a [`LaneClaim`]'s writes.
fn records(writes: &[Write]) -> Array {
    writes
        .iter()
        .map(|write| match write {
            Write::Put(message) => JsValue::from(to_record(message, true)),
            Write::Ready(message) => JsValue::from(to_ready_record(message)),
        })
        .collect()
}

/// `Queue.claim`, `Queue.claimMany` and `Queue.reap`: a [`LaneClaim`] over the `claim` index.
/// The store reads [`ClaimPlan::ranges`], hands the timed page to [`ClaimPlan::timed`] (and,
/// when [`ClaimPlan::walking`], the rest of the timed range one record at a time), then the head
/// of the ready lane to [`ClaimPlan::ready`] while [`ClaimPlan::wanted`] is not 0, writing every
/// record it is given back.
#[wasm_bindgen]
pub struct ClaimPlan {
    queue: String,
    plan: LaneClaim,
    tokens: std::vec::IntoIter<String>,
    walking: bool,
    reap: bool,
}

impl ClaimPlan {
    /// The plan of the claim `args` at `ctx` (the instant JavaScript read before the
    /// transaction; no stored queue settings yet: never paused).
    pub(crate) fn new(
        args: ClaimArgs,
        ctx: &Context,
        reap: bool,
    ) -> std::result::Result<Self, JsValue> {
        let tokens = js(lease_tokens(args.n))?.into_iter();
        // No stored settings yet, so never paused: `start` always has a claim.
        let claim = args.start(ctx).unwrap_or_else(|| unreachable!());
        Ok(Self {
            queue: args.queue,
            plan: LaneClaim::new(claim),
            tokens,
            walking: false,
            reap,
        })
    }
}

#[wasm_bindgen]
impl ClaimPlan {
    /// `[timed, ready]`: the timed lane of the queue up to now, and its ready lane.
    pub fn ranges(&self) -> Array {
        let now = self.plan.args().now;
        [keys::timed(&self.queue, now), keys::ready(&self.queue)]
            .into_iter()
            .collect()
    }

    /// How many records of the timed range to read at once.
    #[wasm_bindgen(getter, js_name = pageSize)]
    #[allow(clippy::cast_possible_truncation)] // a small constant
    pub fn page_size(&self) -> u32 {
        deadletter::engine::TIMED_PAGE as u32
    }

    /// How many records to read from the head of the ready lane now: 0 when nothing more.
    #[wasm_bindgen(getter)]
    pub fn wanted(&self) -> u32 {
        u32::try_from(self.plan.wanted()).unwrap_or(u32::MAX)
    }

    /// Whether the timed page was full: the store walks the rest of the timed range one record
    /// at a time through [`ClaimPlan::timed`], then reads the ready lane again.
    #[wasm_bindgen(getter)]
    pub fn walking(&self) -> bool {
        self.walking
    }

    /// Records of the timed range, in key order; returns the records to write.
    pub fn timed(&mut self, page: &Array) -> std::result::Result<Array, JsValue> {
        let mut writes = Vec::new();
        for record in page.iter() {
            let message = js(from_record(&record))?;
            writes.extend(js(self.plan.timed(message))?);
        }
        if !self.walking && page.length() as usize == deadletter::engine::TIMED_PAGE {
            self.walking = true;
            writes.extend(self.plan.overflow());
        }
        Ok(records(&writes))
    }

    /// Records of the head of the ready lane, in key order; returns the records to write.
    pub fn ready(&mut self, page: &Array) -> std::result::Result<Array, JsValue> {
        let page = js(read_all(page))?;
        let tokens = &mut self.tokens;
        let writes = self.plan.ready(page, || tokens.next().unwrap_or_default());
        Ok(records(&js(writes)?))
    }

    /// Once committed: `{ value, dead }`, `value` the messages taken (for `reap`, how many leases
    /// were expired).
    pub fn finish(self) -> JsValue {
        let reap = self.reap;
        let claimed = self.plan.finish();
        let expired = Outcome::new((), &claimed.expired);
        let value = if reap {
            count(u64::try_from(claimed.expired.len()).unwrap_or(u64::MAX))
        } else {
            messages(&claimed.taken)
        };
        outcome(&value, &expired.dead)
    }
}
