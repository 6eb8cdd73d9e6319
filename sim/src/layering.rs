//! A test of the layers ARCHITECTURE.md draws: a module imports only from its own layer and the
//! layers below it; the scenario file format sits at the edge, so the layers below it (engine,
//! exec, hw, model, net, collective, workload, stats) must not name `scenario`, open files, or
//! keep global state.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    const BELOW_THE_EDGE: [&str; 8] = [
        "engine",
        "exec",
        "hw",
        "model",
        "net",
        "collective",
        "workload",
        "stats",
    ];

    /// The layers of ARCHITECTURE.md's picture, top to bottom, by the module (or file) that
    /// starts a path under `src/`.
    const LAYERS: [&[&str]; 12] = [
        &[
            "cli",
            "main",
            "check",
            "run",
            "validate",
            "sweep",
            "plan",
            "collective_bench",
        ],
        &["scenario/lower"],
        &["scenario", "files"],
        &["workload"],
        &["report", "uncertainty"],
        &["exec"],
        &["collective"],
        &["net"],
        &["hw", "model"],
        &["stats"],
        &[
            "quantity",
            "suggest",
            "key_error",
            "release",
            "panic_message",
        ],
        &["engine"],
    ];

    /// The layer of a path under `src/` (or of a module path written `a::b`).
    fn layer_of(path: &str) -> Option<usize> {
        let path = path.replace("::", "/");
        let module = if path.starts_with("scenario/lower") {
            "scenario/lower"
        } else {
            path.split(['/', '.']).next().unwrap_or("")
        };
        LAYERS.iter().position(|l| l.contains(&module))
    }

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

    /// The files below the edge (relative to `src/`, sorted) whose text `says`.
    fn below_the_edge(says: impl Fn(&str) -> bool) -> Vec<String> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        for layer in BELOW_THE_EDGE {
            sources(&src.join(layer), &mut files);
        }
        let mut found: Vec<String> = files
            .iter()
            .filter(|f| says(&std::fs::read_to_string(f).expect("readable source")))
            .map(|f| {
                let rel = f.strip_prefix(&src).expect("under src");
                rel.to_string_lossy().replace('\\', "/")
            })
            .collect();
        found.sort();
        found
    }

    #[test]
    fn imports_point_down_the_layers() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        let mut upward = Vec::new();
        for f in files {
            let rel = f.strip_prefix(&src).expect("under src").to_string_lossy();
            let rel = rel.replace('\\', "/");
            if rel.ends_with("tests.rs") || rel.contains("/tests/") || rel == "layering.rs" {
                continue;
            }
            let Some(own) = layer_of(&rel) else {
                continue;
            };
            let text = std::fs::read_to_string(&f).expect("readable source");
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for (i, _) in code.match_indices("crate::") {
                let after = &code[i + "crate::".len()..];
                let end = after
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .unwrap_or(after.len());
                let target = &after[..end];
                if let Some(to) = layer_of(target)
                    && to < own
                {
                    upward.push(format!("{rel} -> {target}"));
                }
            }
        }
        upward.sort();
        upward.dedup();
        assert!(
            upward.is_empty(),
            "imports that point up ARCHITECTURE.md's layers: {upward:?}"
        );
    }

    #[test]
    fn layers_below_the_edge_do_not_name_the_scenario() {
        let naming = below_the_edge(|text| text.contains("scenario::"));
        assert!(
            naming.is_empty(),
            "these files below the scenario layer name `scenario`: {naming:?}; take a plain \
             configuration from the lowering layer (scenario/lower/) instead"
        );
    }

    #[test]
    fn layers_below_the_edge_do_not_open_files() {
        let reading = below_the_edge(|text| {
            text.contains("std::fs") || text.contains("fs::read") || text.contains("File::open")
        });
        assert!(
            reading.is_empty(),
            "{reading:?} open files below the edge; parse text that files.rs reads"
        );
    }

    #[test]
    fn layers_below_the_edge_keep_no_global_state() {
        let global = below_the_edge(|text| {
            let cells = ["Mutex", "RwLock", "OnceLock", "LazyLock", "Cell", "Atomic"];
            text.lines().any(|l| {
                let l = l.trim_start();
                l.starts_with("static ") && cells.iter().any(|c| l.contains(c))
                    || l.starts_with("static mut ")
                    || l.contains("thread_local!")
                    || l.contains("Box::leak")
            })
        });
        assert!(
            global.is_empty(),
            "{global:?} keep process-wide state below the edge; pass owned values instead"
        );
    }
}
