//! Which timeline lanes belong to a GPU clicked on the Topology tab.
//!
//! The timeline does not have a lane per GPU of the cluster. Training simulates one GPU per
//! pipeline stage, the stage's first rank (`stage x stride`), and groups its lanes
//! "GPU {rank} (stage {s})" ("GPU 0" without pipeline parallelism); that GPU stands for its
//! tensor-, context- and data-parallel peers. Diffusion and collectives simulate rank 0 ("GPU 0").
//! Serving lanes are per replica or server, not per GPU. [`locate`] turns a rank into the lanes
//! that show it, and says when they are another GPU's.

use crate::topology_layout::Stands;
use crate::tracks::Track;

/// The lanes that show a GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lanes {
    /// The GPU clicked.
    pub rank: u32,
    /// The simulated GPU whose lanes these are (`rank` when it has its own).
    pub shown: u32,
    pub stage: Option<u32>,
    /// The lane group, e.g. "GPU 8 (stage 1)".
    pub group: String,
    /// Indices of its tracks (consecutive).
    pub tracks: std::ops::Range<usize>,
}

impl Lanes {
    /// Whether the GPU has lanes of its own.
    pub fn own(&self) -> bool {
        self.rank == self.shown
    }

    /// One sentence for the timeline's header.
    pub fn note(&self) -> String {
        if self.own() {
            format!("GPU {}: its lanes are {}.", self.rank, self.group)
        } else {
            let why = match self.stage {
                Some(s) => format!(
                    "the timeline simulates one GPU per pipeline stage; GPU {} (stage {s}) stands for it",
                    self.shown
                ),
                None => format!(
                    "the timeline simulates one GPU; GPU {} stands for it",
                    self.shown
                ),
            };
            format!("GPU {} has no lanes of its own: {why}.", self.rank)
        }
    }
}

/// The tracks whose label starts with `group · `.
fn group_tracks(group: &str, tracks: &[Track]) -> Option<std::ops::Range<usize>> {
    let prefix = format!("{group} · ");
    let first = tracks.iter().position(|t| t.label.starts_with(&prefix))?;
    let n = tracks[first..]
        .iter()
        .take_while(|t| t.label.starts_with(&prefix))
        .count();
    Some(first..first + n)
}

/// The lanes that show GPU `rank`, or why there are none.
pub fn locate(rank: u32, stands: Stands, tracks: &[Track]) -> Result<Lanes, String> {
    let (shown, stage, group) = match stands {
        Stands::Stages { pp, stride } if pp > 1 => {
            let stage = (rank / stride.max(1)) % pp;
            let shown = stage * stride;
            (shown, Some(stage), format!("GPU {shown} (stage {stage})"))
        }
        Stands::Stages { .. } | Stands::RankZero => (0, None, "GPU 0".to_string()),
        Stands::NotPerGpu => {
            return Err(format!(
                "GPU {rank}: this run's timeline has lanes per replica or server, not per GPU."
            ));
        }
    };
    let tracks = group_tracks(&group, tracks)
        .ok_or_else(|| format!("GPU {rank}: the timeline has no lanes named \"{group}\"."))?;
    Ok(Lanes {
        rank,
        shown,
        stage,
        group,
        tracks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracks(groups: &[&str]) -> Vec<Track> {
        groups
            .iter()
            .flat_map(|g| {
                ["compute", "data-parallel comm"]
                    .map(|lane| Track::new(format!("{g} · {lane}"), Vec::new()))
            })
            .collect()
    }

    #[test]
    fn a_stage_gpu_has_its_own_lanes_and_its_peers_point_to_it() {
        // TP8 PP4 DP2 (stride of pp: 16): stages are ranks 0, 16, 32, 48.
        let t = tracks(&[
            "GPU 0 (stage 0)",
            "GPU 16 (stage 1)",
            "GPU 32 (stage 2)",
            "GPU 48 (stage 3)",
        ]);
        let stands = Stands::Stages { pp: 4, stride: 16 };
        let own = locate(16, stands, &t).unwrap();
        assert!(own.own());
        assert_eq!(own.group, "GPU 16 (stage 1)");
        assert_eq!(own.tracks, 2..4);
        assert_eq!(own.note(), "GPU 16: its lanes are GPU 16 (stage 1).");

        let peer = locate(37, stands, &t).unwrap();
        assert!(!peer.own());
        assert_eq!((peer.shown, peer.stage), (32, Some(2)));
        assert_eq!(peer.tracks, 4..6);
        assert!(
            peer.note().contains("GPU 32 (stage 2) stands for it"),
            "{}",
            peer.note()
        );
        // The last rank is in the last stage.
        assert_eq!(locate(63, stands, &t).unwrap().shown, 48);
    }

    #[test]
    fn without_pipeline_gpu_0_stands_for_all_and_serving_has_none() {
        let t = tracks(&["GPU 0"]);
        let l = locate(5, Stands::Stages { pp: 1, stride: 8 }, &t).unwrap();
        assert_eq!((l.shown, l.tracks.clone()), (0, 0..2));
        assert!(l.note().contains("GPU 0 stands for it"), "{}", l.note());
        assert_eq!(locate(3, Stands::RankZero, &t).unwrap().shown, 0);
        assert!(locate(0, Stands::NotPerGpu, &t).is_err());
        assert!(locate(0, Stands::RankZero, &tracks(&["replica 0"])).is_err());
    }
}
