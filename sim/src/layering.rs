//! A test of the layers ARCHITECTURE.md draws: the scenario file format sits at the edge, so the
//! layers below it (engine, exec, hw, model, net, collective, workload) must not name `scenario`.
//! The files that still do are listed; the list may only shrink, and a file that stops naming
//! `scenario` must leave it.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    const BELOW_THE_EDGE: [&str; 7] = [
        "engine",
        "exec",
        "hw",
        "model",
        "net",
        "collective",
        "workload",
    ];

    /// Files below the edge that still read scenario types, until the lowering layer takes them.
    const STILL_NAMING_SCENARIO: [&str; 2] = [
        "workload/serving/mod.rs",
        "workload/serving/pipelines.rs",
    ];

    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("source folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn layers_below_the_edge_do_not_name_the_scenario() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        for layer in BELOW_THE_EDGE {
            sources(&src.join(layer), &mut files);
        }
        let mut naming: Vec<String> = files
            .iter()
            .filter(|f| {
                let text = std::fs::read_to_string(f).expect("readable source");
                text.contains("scenario::")
            })
            .map(|f| {
                let rel = f.strip_prefix(&src).expect("under src");
                rel.to_string_lossy().replace('\\', "/")
            })
            .collect();
        naming.sort();
        let new: Vec<&String> = naming
            .iter()
            .filter(|f| !STILL_NAMING_SCENARIO.contains(&f.as_str()))
            .collect();
        assert!(
            new.is_empty(),
            "these files below the scenario layer name `scenario`: {new:?}; take a plain \
             configuration from the layer above instead"
        );
        let cleared: Vec<&&str> = STILL_NAMING_SCENARIO
            .iter()
            .filter(|f| !naming.iter().any(|n| n == *f))
            .collect();
        assert!(
            cleared.is_empty(),
            "{cleared:?} no longer name `scenario`: remove them from STILL_NAMING_SCENARIO"
        );
    }
}
