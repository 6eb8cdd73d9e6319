use super::error::Location;
use super::*;

const GOOD: &str = r#"
name = "small"
kind = "training"

[cluster]
gpu = "A100-80GB"
nodes = 2
gpus_per_node = 8

[cluster.inter_node]
topology = "fat-tree"
nic_bandwidth = "200 Gb/s"

[model]
preset = "gpt3-1.3b"

[parallel]
micro_batch = 4
global_batch = 512

[expect]
"tflops_per_gpu" = { min = 100, max = 200 }
"#;

fn parse(text: &str, sets: &[&str]) -> Result<Scenario, ScenarioError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Scenario::parse(Path::new("t.toml"), text.to_string(), &sets)
}

fn err(text: &str, sets: &[&str]) -> ScenarioError {
    parse(text, sets).expect_err("must be refused")
}

fn line_col(e: &ScenarioError) -> (usize, usize) {
    match &e.location {
        Location::File { line, column, .. } => (*line, *column),
        other => panic!("expected a file location, got {other:?}: {e}"),
    }
}

#[test]
fn a_good_scenario_reads() {
    let s = parse(GOOD, &[]).unwrap();
    assert_eq!(s.kind, Kind::Training);
    assert_eq!(s.file.cluster.nodes, Some(2));
    let nic = s.file.cluster.inter_node.as_ref().unwrap().nic_bandwidth;
    assert_eq!(nic.unwrap().0, 25e9);
    assert_eq!(s.file.expect["tflops_per_gpu"].min, Some(100.0));
}

#[test]
fn unknown_keys_get_did_you_mean_and_a_location() {
    let e = err(&GOOD.replace("micro_batch", "micro_bacth"), &[]);
    assert_eq!(e.message, "unknown key `micro_bacth` in [parallel]");
    assert!(
        e.help
            .as_ref()
            .unwrap()
            .starts_with("did you mean `micro_batch`?")
    );
    assert_eq!(line_col(&e), (18, 1));
}

#[test]
fn unknown_values_list_the_valid_ones() {
    let text = GOOD.replace("micro_batch = 4", "schedule = \"1f1bb\"");
    let e = err(&text, &[]);
    assert_eq!(
        e.message,
        "`1f1bb` is not a valid value for `parallel.schedule`"
    );
    let help = e.help.unwrap();
    assert!(help.contains("did you mean \"1f1b\"?"), "{help}");
    assert!(help.contains("\"interleaved-1f1b\""), "{help}");
}

#[test]
fn quantities_need_units() {
    let e = err(&GOOD.replace("\"200 Gb/s\"", "200"), &[]);
    assert!(
        e.message.contains("a bare number (200) is a count"),
        "{}",
        e.message
    );
    assert_eq!(line_col(&e), (12, 17));
}

#[test]
fn wrong_types_name_the_key() {
    let e = err(&GOOD.replace("nodes = 2", "nodes = \"two\""), &[]);
    assert!(e.message.starts_with("cluster.nodes: "), "{}", e.message);
    assert!(e.message.contains("whole number"), "{}", e.message);
}

#[test]
fn broken_toml_is_located() {
    let e = err(&GOOD.replace("nodes = 2", "nodes = [2"), &[]);
    assert!(
        e.message.starts_with("this is not valid TOML"),
        "{}",
        e.message
    );
    assert_eq!(
        line_col(&e).0,
        8,
        "where the parser found the array unclosed"
    );
}

#[test]
fn kinds_are_checked_first() {
    let e = err(&GOOD.replace("\"training\"", "\"trainig\""), &[]);
    assert!(e.help.unwrap().starts_with("did you mean \"training\"?"));
    let e = err(&GOOD.replace("kind = \"training\"", ""), &[]);
    assert!(e.message.contains("no `kind`"));
}

#[test]
fn set_overrides_existing_and_new_keys() {
    let s = parse(
        GOOD,
        &[
            "parallel.micro_batch=8",
            "parallel.tp=2",
            "cluster.gpu=H100",
        ],
    )
    .unwrap();
    assert_eq!(s.file.parallel.micro_batch, Some(8));
    assert_eq!(s.file.parallel.tp, Some(2));
    assert_eq!(s.file.cluster.gpu.as_deref(), Some("H100"));
    let s = parse(GOOD, &["cluster.intra_node.bandwidth=300 GB/s"]).unwrap();
    let bw = s.file.cluster.intra_node.unwrap().bandwidth.unwrap();
    assert_eq!(bw.0, 300e9);
}

#[test]
fn errors_in_set_values_point_at_the_option() {
    let e = err(GOOD, &["parallel.micro_batch=four"]);
    assert_eq!(
        e.location,
        Location::Override {
            index: 0,
            option: "parallel.micro_batch=four".into()
        }
    );
    assert!(e.message.contains("parallel.micro_batch"), "{}", e.message);
    let e = err(GOOD, &["parallel.tpp=2"]);
    assert!(e.help.unwrap().starts_with("did you mean `tp`?"));
    let e = err(GOOD, &["parallel.tp"]);
    assert!(e.message.contains("missing `=`"));
    let e = err(GOOD, &["name.x=1"]);
    assert!(
        e.message.contains("is a string, not a table"),
        "{}",
        e.message
    );
}

#[test]
fn empty_expectations_are_refused() {
    let e = err(&GOOD.replace("{ min = 100, max = 200 }", "{}"), &[]);
    assert!(e.message.contains("checks nothing"));
    assert_eq!(line_col(&e).0, 22);
}

#[test]
fn error_at_falls_back_to_the_table_or_file() {
    let s = parse(GOOD, &[]).unwrap();
    let e = s.error_at("parallel.tp", "tp must divide the GPUs");
    assert_eq!(line_col(&e).0, 17, "points at [parallel]");
    let e = s.error_at("serving.tp", "no serving here");
    assert_eq!(e.location, Location::Whole);
}

#[test]
fn sections_and_keys_of_another_kind_are_refused() {
    let e = err(&format!("{GOOD}\n[workload]\nrequests = 3\n"), &[]);
    assert!(
        e.message
            .contains("`workload` does not apply to a training scenario"),
        "{}",
        e.message
    );
    let e = err(&GOOD.replace("[parallel]", "[parallel]\nulysses = 2"), &[]);
    assert!(e.message.contains("`parallel.ulysses`"), "{}", e.message);
}
