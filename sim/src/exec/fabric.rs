//! Collectives sharing links at run time ([`LinkLoads`], `Fabric`): each operation that crosses
//! the links between servers loads each of them by a share of its effective capacity while it
//! runs at its priced speed (its bytes on the link over its duration times the capacity). While
//! the operations running at one moment ask more than a link has, they slow to weighted max-min
//! fair speeds (progressive filling: every unfrozen operation speeds up alike until a link fills;
//! those on it freeze at that speed), their remaining work kept and their ends moved. An
//! operation alone runs at its priced speed. Ignored: the order of an operation's phases (its
//! load is spread evenly over its duration), and links inside a server (a server runs one job).

use crate::engine::{EventId, Scheduler, SimTime};

/// What share of each link an operation of a graph uses while it runs at its priced speed.
/// Operations with the same traffic share one entry.
#[derive(Clone, Debug, Default)]
pub struct LinkLoads {
    /// Entry of each operation (`NONE`: it loads no shared link); empty: no operation does.
    entry: Vec<u32>,
    /// Links and loads of entry `e`: `link[start[e]..start[e + 1]]`.
    start: Vec<u32>,
    link: Vec<u32>,
    load: Vec<f64>,
}

const NONE: u32 = u32::MAX;

impl LinkLoads {
    /// No operation of a graph of `ops` operations loads a shared link yet.
    pub fn new(ops: usize) -> Self {
        LinkLoads {
            entry: vec![NONE; ops],
            start: vec![0],
            link: Vec::new(),
            load: Vec::new(),
        }
    }

    /// A traffic pattern: `(link, share of its capacity)` pairs, shares clamped to (0, 1] (an
    /// operation alone never waits for a link); its entry number.
    pub fn add(&mut self, links: impl IntoIterator<Item = (u32, f64)>) -> u32 {
        for (l, share) in links {
            if share > 0.0 {
                self.link.push(l);
                self.load.push(share.min(1.0));
            }
        }
        self.start.push(self.link.len() as u32);
        (self.start.len() - 2) as u32
    }

    /// Operation `op` runs with the traffic of entry `e`.
    pub fn set(&mut self, op: u32, e: u32) {
        self.entry[op as usize] = e;
    }

    /// The links and loads of operation `op`, if it loads any.
    fn of(&self, op: usize) -> Option<(&[u32], &[f64])> {
        let e = *self.entry.get(op)? as usize;
        if e == NONE as usize {
            return None;
        }
        let (a, b) = (self.start[e] as usize, self.start[e + 1] as usize);
        (a < b).then(|| (&self.link[a..b], &self.load[a..b]))
    }
}

/// An operation on the links: whose, its event, work left at full speed (picoseconds) since
/// `since`, its speed (0-1], its pending end and its links.
struct Flow {
    job: usize,
    ev: u32,
    left: u64,
    since: SimTime,
    rate: f64,
    pending: Option<EventId>,
    links: Vec<(u32, f64)>,
}

/// The operations on the shared links at this moment, and the bytes each job's moved on each.
pub(super) struct Fabric {
    capacity: Vec<f64>,
    flows: Vec<Flow>,
    /// Bytes per job per link.
    pub carried: Vec<Vec<f64>>,
    residual: Vec<f64>,
    weight: Vec<f64>,
}

impl Fabric {
    /// Links of effective capacities `capacity` (bytes/s) shared by `jobs` jobs.
    pub fn new(capacity: Vec<f64>, jobs: usize) -> Self {
        let n = capacity.len();
        Fabric {
            carried: vec![vec![0.0; n]; jobs],
            capacity,
            flows: Vec::new(),
            residual: vec![1.0; n],
            weight: vec![0.0; n],
        }
    }

    /// Operation `op` of `job`, event `ev`, starts `work` picoseconds of priced time now: its
    /// end, at the speed the links allow. None when it loads no shared link.
    pub fn start(
        &mut self,
        job: usize,
        loads: &LinkLoads,
        op: usize,
        ev: u32,
        work: u64,
        sched: &mut Scheduler<u32>,
    ) -> bool {
        let Some((links, load)) = loads.of(op) else {
            return false;
        };
        let links = links.iter().copied().zip(load.iter().copied()).collect();
        self.start_links(job, links, ev, work, sched);
        true
    }

    /// A transfer of `job`, event `ev`, starts `work` picoseconds of priced time now on `links`
    /// (`(link, share of its capacity)`, shares in (0, 1]); `ev` fires at its end, at the speed
    /// the links allow.
    pub fn start_links(
        &mut self,
        job: usize,
        links: Vec<(u32, f64)>,
        ev: u32,
        work: u64,
        sched: &mut Scheduler<u32>,
    ) {
        self.book(sched.now());
        let pending = sched.after(SimTime::from_ps(work), ev);
        self.flows.push(Flow {
            job,
            ev,
            left: work,
            since: sched.now(),
            rate: 1.0,
            pending: Some(pending),
            links,
        });
        self.share(sched);
    }

    /// Event `ev` fired: if it ended a flow, the others share what it leaves.
    pub fn finish(&mut self, ev: u32, sched: &mut Scheduler<u32>) {
        let Some(k) = self.flows.iter().position(|f| f.ev == ev) else {
            return;
        };
        self.book(sched.now());
        self.flows.remove(k);
        self.share(sched);
    }

    /// Books every flow's progress up to `now` at its speed, and the bytes it moved.
    fn book(&mut self, now: SimTime) {
        for f in &mut self.flows {
            let elapsed = (now - f.since).as_ps();
            let done = ((elapsed as f64 * f.rate) as u64).min(f.left);
            f.left -= done;
            f.since = now;
            let seconds = done as f64 * 1e-12;
            for &(l, share) in &f.links {
                self.carried[f.job][l as usize] += seconds * share * self.capacity[l as usize];
            }
        }
    }

    /// Weighted max-min fair speeds of the running flows; a flow whose speed changed has its
    /// end moved.
    fn share(&mut self, sched: &mut Scheduler<u32>) {
        let rates = self.rates();
        for (f, rate) in self.flows.iter_mut().zip(rates) {
            if rate == f.rate {
                continue;
            }
            if let Some(p) = f.pending {
                sched.cancel(p);
            }
            f.rate = rate;
            let wall = (f.left as f64 / rate).ceil() as u64;
            f.pending = Some(sched.after(SimTime::from_ps(wall), f.ev));
        }
    }

    /// Progressive filling: all unfrozen flows rise alike until a link fills (first such link in
    /// link order) or they reach full speed.
    fn rates(&mut self) -> Vec<f64> {
        let n = self.flows.len();
        let mut rate = vec![0.0; n];
        let mut frozen = vec![false; n];
        for f in &self.flows {
            for &(l, _) in &f.links {
                self.residual[l as usize] = 1.0;
            }
        }
        loop {
            for f in &self.flows {
                for &(l, _) in &f.links {
                    self.weight[l as usize] = 0.0;
                }
            }
            for (f, _) in self.flows.iter().zip(&frozen).filter(|(_, z)| !**z) {
                for &(l, share) in &f.links {
                    self.weight[l as usize] += share;
                }
            }
            let mut level = 1.0;
            let mut full: Option<u32> = None;
            for (f, _) in self.flows.iter().zip(&frozen).filter(|(_, z)| !**z) {
                for &(l, _) in &f.links {
                    let fill = self.residual[l as usize].max(0.0) / self.weight[l as usize];
                    if fill < level || (fill == level && full.is_some_and(|b| l < b)) {
                        (level, full) = (fill, Some(l));
                    }
                }
            }
            let Some(link) = full else {
                for (k, r) in rate.iter_mut().enumerate() {
                    if !frozen[k] {
                        *r = 1.0;
                    }
                }
                return rate;
            };
            // A link already full leaves its flows a sliver, never a stop.
            let level = level.max(1e-6);
            for (k, f) in self.flows.iter().enumerate() {
                if frozen[k] || !f.links.iter().any(|&(l, _)| l == link) {
                    continue;
                }
                (frozen[k], rate[k]) = (true, level);
                for &(l, share) in &f.links {
                    self.residual[l as usize] -= share * level;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Process, Simulation};

    /// Flows started at given times (µs), each `work` µs of priced time on its links.
    struct Starts {
        fabric: Fabric,
        loads: LinkLoads,
        at: Vec<u64>,
        work: Vec<u64>,
        end: Vec<SimTime>,
    }

    impl Process for Starts {
        type Event = u32;
        fn start(&mut self, sched: &mut Scheduler<u32>) {
            for (k, &t) in self.at.iter().enumerate() {
                sched.at(SimTime::from_us(t), 1000 + k as u32);
            }
        }
        fn handle(&mut self, ev: u32, sched: &mut Scheduler<u32>) {
            if ev >= 1000 {
                let k = (ev - 1000) as usize;
                let work = SimTime::from_us(self.work[k]).as_ps();
                self.fabric.start(0, &self.loads, k, k as u32, work, sched);
            } else {
                self.end[ev as usize] = sched.now();
                self.fabric.finish(ev, sched);
            }
        }
    }

    fn run(patterns: &[&[(u32, f64)]], at: &[u64], work: &[u64]) -> (Vec<f64>, Vec<f64>) {
        let mut loads = LinkLoads::new(patterns.len());
        for (k, p) in patterns.iter().enumerate() {
            let e = loads.add(p.iter().copied());
            loads.set(k as u32, e);
        }
        let mut sim = Simulation::new(Starts {
            fabric: Fabric::new(vec![1e9; 4], 1),
            loads,
            at: at.to_vec(),
            work: work.to_vec(),
            end: vec![SimTime::ZERO; patterns.len()],
        });
        sim.run_to_end();
        let p = sim.process;
        let us = p.end.iter().map(|t| t.as_ps() as f64 / 1e6).collect();
        (us, p.fabric.carried[0].clone())
    }

    #[test]
    fn a_flow_alone_keeps_its_priced_time() {
        let (end, carried) = run(&[&[(0, 0.9), (1, 0.3)]], &[5], &[100]);
        assert_eq!(end, vec![105.0]);
        // 100 µs at 0.9 of 1 GB/s on link 0.
        assert!((carried[0] - 90_000.0).abs() < 1.0, "{carried:?}");
    }

    #[test]
    fn two_flows_on_one_full_link_share_it_while_both_run() {
        // Each fills 0.8 of link 0: together they ask 1.6, so each runs at 1/1.6 while both run.
        let (end, _) = run(&[&[(0, 0.8)], &[(0, 0.8)]], &[0, 50], &[100, 100]);
        // The first does 50 µs alone, then its other 50 at 0.625: 80 µs more, ending at 130;
        // the second did 50 µs of work by 130 and its last 50 alone.
        assert!((end[0] - 130.0).abs() < 1e-3, "{end:?}");
        assert!((end[1] - 180.0).abs() < 1e-3, "{end:?}");
    }

    #[test]
    fn flows_on_other_links_or_with_room_do_not_slow() {
        let (end, _) = run(
            &[&[(0, 0.5)], &[(0, 0.5)], &[(1, 1.0)]],
            &[0, 0, 0],
            &[40, 40, 40],
        );
        assert_eq!(end, vec![40.0, 40.0, 40.0]);
    }

    #[test]
    fn max_min_gives_the_flow_held_elsewhere_less_and_the_rest_to_the_other() {
        // Flow 0 uses links 0 and 1, flow 1 link 0, flow 2 link 1 twice as hard. Link 1 fills
        // first at speed 1/3 (flows 0 and 2); flow 1 takes what link 0 has left: 1 - 1/3.
        let mut loads = LinkLoads::new(3);
        for (k, p) in [vec![(0, 1.0), (1, 1.0)], vec![(0, 1.0)], vec![(1, 1.0)]]
            .into_iter()
            .enumerate()
        {
            let e = loads.add(p);
            loads.set(k as u32, e);
        }
        let mut fabric = Fabric::new(vec![1.0; 2], 1);
        for (k, links) in [vec![(0, 1.0), (1, 1.0)], vec![(0, 1.0)], vec![(1, 2.0)]]
            .into_iter()
            .enumerate()
        {
            fabric.flows.push(Flow {
                job: 0,
                ev: k as u32,
                left: 1,
                since: SimTime::ZERO,
                rate: 1.0,
                pending: None,
                links,
            });
        }
        let r = fabric.rates();
        assert!((r[0] - 1.0 / 3.0).abs() < 1e-12, "{r:?}");
        assert!((r[2] - 1.0 / 3.0).abs() < 1e-12, "{r:?}");
        assert!((r[1] - 2.0 / 3.0).abs() < 1e-12, "{r:?}");
    }
}
