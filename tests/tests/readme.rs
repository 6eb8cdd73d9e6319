//! The README shows real output: its summary of the first shipped scenario is what `clustersim
//! run` prints for it today, line for line (the README stops before the run's wall time).

use std::path::Path;

#[test]
fn the_readme_summary_is_the_real_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = &readme[readme.find("## Reading the output").expect("the section")..];
    let start = section.find("```text\n").expect("a text block") + "```text\n".len();
    let block = &section[start..start + section[start..].find("```").expect("its end")];
    let command = readme
        .lines()
        .find(|l| l.starts_with("cargo run --release -- run "))
        .expect("the README's run command");
    let scenario = command
        .trim_start_matches("cargo run --release -- run ")
        .split_whitespace()
        .next()
        .unwrap();
    let s = clustersim::Scenario::load(&root.join(scenario), &[]).unwrap();
    let mut report = clustersim::run(&s).unwrap().report;
    report["sim"]["wall_s"] = 0.5.into();
    let printed = clustersim::report::summary::render(&report);
    let printed: Vec<&str> = printed.lines().collect();
    let shown: Vec<&str> = block.lines().collect();
    assert!(shown.len() >= 10, "the README shows {} lines", shown.len());
    assert_eq!(
        shown,
        printed[..shown.len()],
        "README.md's summary differs from `clustersim run {scenario}`: paste the new output"
    );
}
