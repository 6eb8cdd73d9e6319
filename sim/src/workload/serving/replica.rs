//! One replica's scheduler: which requests run in the next iteration, with a paged KV cache.
//!
//! - vLLM: admit waiting requests (first come, first served) while the batch size, the token
//!   budget and free KV blocks allow, and run their whole prompts as a prefill-only iteration;
//!   otherwise run one decode step of every running request.
//! - Sarathi-Serve: every iteration runs one decode step of every running request and fills the
//!   rest of the token budget with prefill chunks (part-way prompts first), so decodes never stall
//!   behind a long prompt.
//! - Static: admit a batch only when the previous one has finished; reserve whole KV caches.
//!
//! A request whose KV cache came from a prefill replica is admitted without a prefill. KV blocks
//! are allocated as tokens enter the cache; a decode step finding none free preempts the most
//! recently admitted request to the head of the queue: `recompute` drops its cache, `swap` copies
//! it to host memory and back (the plan counts the tokens; the fleet prices them over PCIe).

use super::cost::Batch;
use super::policy::SchedulerKind;
use std::collections::VecDeque;

/// A request's progress on its replica.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    pub prompt: u32,
    pub output: u32,
    /// Tokens to prefill before the next token can be sampled (the prompt, or after a recompute
    /// preemption the prompt and the tokens generated so far).
    pub to_prefill: u32,
    /// Tokens in the KV cache.
    pub cached: u32,
    pub generated: u32,
    pub blocks: u32,
    /// Its cache is in host memory (swap preemption): readmitting it copies `cached` tokens back.
    pub swapped: bool,
}

/// Whether a request's whole prefilled cache waits elsewhere (another replica's, or host memory)
/// and it only needs blocks to resume decoding.
fn whole_elsewhere(p: &Progress) -> bool {
    p.cached > 0 && p.cached >= p.to_prefill
}

/// What one iteration runs, by request.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub prefill: Vec<(usize, u32)>,
    pub decode: Vec<usize>,
    pub batch: Batch,
    /// KV tokens copied to host memory (preempted) and back (readmitted) by this iteration.
    pub swap_tokens: u64,
}

#[derive(Clone, Debug)]
pub struct Limits {
    pub scheduler: SchedulerKind,
    pub max_batch_size: u32,
    pub max_batch_tokens: u32,
    pub block_tokens: u32,
    /// Preempt by swapping the cache to host memory instead of recomputing it.
    pub swap: bool,
}

#[derive(Clone, Debug)]
pub struct Replica {
    pub limits: Limits,
    pub blocks_total: u32,
    pub blocks_free: u32,
    pub waiting: VecDeque<usize>,
    /// Admitted requests, oldest first.
    pub running: Vec<usize>,
    pub busy: bool,
    pub preemptions: u64,
    pub peak_blocks_used: u32,
    /// KV tokens swapped out or in since the last plan (priced with it).
    swap_tokens: u64,
    /// KV tokens swapped out and in over the run.
    pub swapped_tokens: u64,
}

impl Replica {
    pub fn new(limits: Limits, blocks: u32) -> Self {
        Replica {
            limits,
            blocks_total: blocks,
            blocks_free: blocks,
            waiting: VecDeque::new(),
            running: Vec::new(),
            busy: false,
            preemptions: 0,
            peak_blocks_used: 0,
            swap_tokens: 0,
            swapped_tokens: 0,
        }
    }

    /// Tokens still to process here: the replica's load, for routers.
    pub fn outstanding(&self, reqs: &[Progress]) -> u64 {
        self.waiting
            .iter()
            .chain(&self.running)
            .map(|&r| {
                let p = &reqs[r];
                (p.to_prefill.saturating_sub(p.cached) + p.output - p.generated) as u64
            })
            .sum()
    }

    fn blocks_for(&self, tokens: u32) -> u32 {
        tokens.div_ceil(self.limits.block_tokens)
    }

    /// Grows a request's cache to `tokens`, taking blocks; false when there are not enough.
    fn grow(&mut self, p: &mut Progress, tokens: u32) -> bool {
        let need = self.blocks_for(tokens).saturating_sub(p.blocks);
        if need > self.blocks_free {
            return false;
        }
        self.blocks_free -= need;
        p.blocks += need;
        let used = self.blocks_total - self.blocks_free;
        self.peak_blocks_used = self.peak_blocks_used.max(used);
        true
    }

    fn release(&mut self, p: &mut Progress) {
        self.blocks_free += p.blocks;
        p.blocks = 0;
    }

    /// Frees a finished request's cache.
    pub fn finish(&mut self, r: usize, reqs: &mut [Progress]) {
        self.running.retain(|&x| x != r);
        self.release(&mut reqs[r]);
    }

    /// Preempts the most recently admitted running request other than `keep`: its cache is
    /// dropped and it waits at the head of the queue to recompute its prompt and generated tokens.
    /// False when there is no other request to preempt.
    fn preempt(&mut self, reqs: &mut [Progress], keep: usize) -> bool {
        let Some(pos) = self.running.iter().rposition(|&r| r != keep) else {
            return false;
        };
        let victim = self.running.remove(pos);
        self.preemptions += 1;
        let p = &mut reqs[victim];
        if self.limits.swap {
            p.swapped = true;
            self.swap_tokens += p.cached as u64;
        } else {
            p.to_prefill = p.prompt + p.generated;
            p.cached = 0;
        }
        self.blocks_free += p.blocks;
        p.blocks = 0;
        self.waiting.push_front(victim);
        true
    }

    /// Takes `r` off the head of the queue into the running batch; a swapped cache comes back.
    fn admit(&mut self, r: usize, reqs: &mut [Progress]) {
        self.waiting.pop_front();
        self.running.push(r);
        let p = &mut reqs[r];
        if p.swapped {
            p.swapped = false;
            self.swap_tokens += p.cached as u64;
        }
    }

    /// The next iteration, or None when there is nothing to run.
    pub fn plan(&mut self, reqs: &mut [Progress]) -> Option<Plan> {
        let mut plan = Plan::default();
        let l = self.limits.clone();
        self.admit_transferred(reqs);
        match l.scheduler {
            SchedulerKind::Vllm => {
                // Prefill-only iteration when anything can be admitted.
                let mut tokens = 0u32;
                while let Some(&r) = self.waiting.front() {
                    if whole_elsewhere(&reqs[r]) {
                        break; // admitted by admit_transferred once it fits
                    }
                    let need = reqs[r].to_prefill - reqs[r].cached;
                    if self.running.len() as u32 + 1 > l.max_batch_size
                        || (tokens + need > l.max_batch_tokens && tokens > 0)
                    {
                        break;
                    }
                    let target = reqs[r].to_prefill;
                    let ok = self.grow(&mut reqs[r], target);
                    if !ok {
                        break;
                    }
                    self.admit(r, reqs);
                    plan.prefill.push((r, need));
                    tokens += need;
                }
                if plan.prefill.is_empty() {
                    self.decode_all(reqs, &mut plan);
                }
            }
            SchedulerKind::Sarathi => {
                self.decode_all(reqs, &mut plan);
                let mut budget = l.max_batch_tokens.saturating_sub(plan.decode.len() as u32);
                // Requests part-way through their prompt, then new ones.
                let partial: Vec<usize> = self
                    .running
                    .iter()
                    .copied()
                    .filter(|&r| reqs[r].cached < reqs[r].to_prefill)
                    .collect();
                for r in partial {
                    if budget == 0 {
                        break;
                    }
                    let chunk = (reqs[r].to_prefill - reqs[r].cached).min(budget);
                    let target = reqs[r].cached + chunk;
                    let ok = self.grow(&mut reqs[r], target);
                    if ok {
                        plan.prefill.push((r, chunk));
                        budget -= chunk;
                    }
                }
                while budget > 0 {
                    let Some(&r) = self.waiting.front() else {
                        break;
                    };
                    if whole_elsewhere(&reqs[r]) || self.running.len() as u32 + 1 > l.max_batch_size
                    {
                        break;
                    }
                    let chunk = (reqs[r].to_prefill - reqs[r].cached).min(budget);
                    let target = reqs[r].cached + chunk;
                    let ok = self.grow(&mut reqs[r], target);
                    if !ok {
                        break;
                    }
                    self.admit(r, reqs);
                    plan.prefill.push((r, chunk));
                    budget -= chunk;
                }
            }
            SchedulerKind::Static => {
                if self.running.is_empty() {
                    while let Some(&r) = self.waiting.front() {
                        if self.running.len() as u32 >= l.max_batch_size {
                            break;
                        }
                        let whole = reqs[r].to_prefill + reqs[r].output;
                        let ok = self.grow(&mut reqs[r], whole);
                        if !ok {
                            break;
                        }
                        self.admit(r, reqs);
                        let need = reqs[r].to_prefill - reqs[r].cached;
                        plan.prefill.push((r, need));
                    }
                }
                if plan.prefill.is_empty() {
                    self.decode_all(reqs, &mut plan);
                }
            }
        }
        for &(r, n) in &plan.prefill {
            let p = &reqs[r];
            plan.batch.prefill.push((n, p.cached));
            if p.cached + n >= p.to_prefill {
                plan.batch.sampling += 1;
            }
        }
        for &r in &plan.decode {
            plan.batch.decode_context += reqs[r].cached as u64;
        }
        plan.batch.decodes = plan.decode.len() as u32;
        plan.batch.sampling += plan.batch.decodes;
        if plan.prefill.is_empty() && plan.decode.is_empty() {
            return None;
        }
        plan.swap_tokens = std::mem::take(&mut self.swap_tokens);
        self.swapped_tokens += plan.swap_tokens;
        Some(plan)
    }

    /// Admits waiting requests whose KV cache is whole elsewhere (arrived from a disaggregated
    /// prefill pool, or swapped out to host memory after their prefill): they join the running
    /// batch without a prefill once their blocks are free, first come, first served.
    fn admit_transferred(&mut self, reqs: &mut [Progress]) {
        while let Some(&r) = self.waiting.front() {
            if !whole_elsewhere(&reqs[r]) {
                break;
            }
            if self.running.len() as u32 + 1 > self.limits.max_batch_size {
                break;
            }
            let target = reqs[r].cached;
            if !self.grow(&mut reqs[r], target) {
                break;
            }
            self.admit(r, reqs);
        }
    }

    /// One decode step for every running request whose prompt is in the cache, preempting when
    /// the cache is full.
    fn decode_all(&mut self, reqs: &mut [Progress], plan: &mut Plan) {
        let mut i = 0;
        while i < self.running.len() {
            let r = self.running[i];
            if reqs[r].cached < reqs[r].to_prefill || reqs[r].generated >= reqs[r].output {
                i += 1;
                continue;
            }
            let target = reqs[r].cached + 1;
            loop {
                let ok = self.grow(&mut reqs[r], target);
                if ok {
                    plan.decode.push(r);
                    i += 1;
                    break;
                }
                if self.preempt(reqs, r) {
                    // The victim may have stood before `r`: find `r` again.
                    i = self.running.iter().position(|&x| x == r).unwrap_or(i);
                    plan.decode.retain(|x| self.running.contains(x));
                } else {
                    // Alone and still too large: the cache cannot hold this request.
                    i += 1;
                    break;
                }
            }
        }
    }

    /// Applies a finished iteration: caches grow, tokens are sampled. Returns the requests that
    /// sampled a token.
    pub fn complete(&mut self, plan: &Plan, reqs: &mut [Progress]) -> Vec<usize> {
        let mut sampled = Vec::new();
        for &(r, n) in &plan.prefill {
            let p = &mut reqs[r];
            p.cached += n;
            if p.cached >= p.to_prefill {
                p.generated += 1;
                sampled.push(r);
            }
        }
        for &r in &plan.decode {
            let p = &mut reqs[r];
            p.cached += 1;
            p.generated += 1;
            sampled.push(r);
        }
        sampled
    }
}
