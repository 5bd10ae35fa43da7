//! The tool registry: every tool once, every schema valid for its own examples, every example
//! parsed into its typed call, and one error shape for every refusal.

use agentvisor::tools::{Family, ParsedCall, Tool, ToolName, examples, parse, parse_call};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;

#[test]
fn every_tool_name_appears_once() {
    let names: Vec<&str> = Tool::all().map(Tool::name).collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "a name is used twice: {names:?}");
    assert_eq!(names.len(), 17 + 11 + 12, "the kernel tools, the agent calls and the module tools");
    for tool in Tool::all() {
        assert_eq!(Tool::parse(tool.name()), Some(tool));
        assert_eq!(tool.spec().name, tool.name());
    }
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read the source tree") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_kernel_and_module_tool_name_is_written_once_in_the_source() {
    let mut files = Vec::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    let texts: Vec<String> = files.iter().map(|f| std::fs::read_to_string(f).expect("read")).collect();
    for tool in Tool::all().filter(|t| t.family() != Family::Agent) {
        let literal = format!("\"{}\"", tool.name());
        let count: usize = texts.iter().map(|t| t.matches(&literal).count()).sum();
        assert_eq!(count, 1, "{literal} is written {count} times in src/: one definition, in the registry");
    }
}

#[test]
fn every_schema_validates_its_own_examples_and_every_example_parses() {
    for tool in Tool::all() {
        let spec = tool.spec();
        assert_eq!(spec.parameters["type"], "object", "{tool}");
        assert!(!spec.description.is_empty(), "{tool} has a description");
        let validator = jsonschema::validator_for(&spec.parameters)
            .unwrap_or_else(|e| panic!("{tool}: its schema is not a valid JSON Schema: {e}"));
        let cases = examples(tool);
        assert!(!cases.is_empty(), "{tool} has an example");
        for example in cases {
            let errors: Vec<String> = validator.iter_errors(&example).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{tool} {example}: {errors:?}");
            let parsed = parse(tool.name(), example.clone())
                .unwrap_or_else(|e| panic!("{tool} {example}: {} {}", e.code, e.message));
            let family = match parsed {
                ParsedCall::Kernel(_) => Family::Kernel,
                ParsedCall::Agent(_) => Family::Agent,
                ParsedCall::Module(_) => Family::Module,
            };
            assert_eq!(family, tool.family(), "{tool}");
        }
    }
}

#[test]
fn every_schema_refuses_unknown_fields_as_the_parse_does() {
    for tool in Tool::all() {
        let spec = tool.spec();
        let validator = jsonschema::validator_for(&spec.parameters).expect("valid schema");
        let mut example = examples(tool).remove(0);
        example["no_such_parameter"] = json!(1);
        assert!(!validator.is_valid(&example), "{tool}: the schema takes an unknown field");
        let e = parse(tool.name(), example).expect_err("an unknown field is refused");
        assert_eq!(e.code, "invalid_arguments", "{tool}");
        assert!(e.message.contains("no_such_parameter"), "{tool}: {}", e.message);
    }
}

#[test]
fn refusals_have_one_shape_with_a_bounded_quote() {
    let huge = "x".repeat(100_000);
    let e = parse(&huge, Value::Null).expect_err("unknown");
    assert_eq!(e.code, "unknown_tool");
    assert!(e.message.len() < 2_000, "the name is quoted in part: {} bytes", e.message.len());
    for tool in Tool::all() {
        assert!(e.message.contains(tool.name()), "the refusal lists {tool}");
    }
    let e = parse("add_task", json!(["not", "an", "object"])).expect_err("not an object");
    assert_eq!(e.code, "invalid_arguments");
    assert!(e.message.contains("found an array"), "{}", e.message);
    let e = parse("wait_child_process", json!({"child_pid": "x"})).expect_err("bad pid");
    assert!(e.message.starts_with("child_pid: "), "the field is named: {}", e.message);
}

#[test]
fn kernel_callers_are_not_offered_agent_calls() {
    for name in ["finish", "spawn_subagent", "add_task"] {
        let e = parse_call(name, json!({})).expect_err("not a kernel tool");
        assert_eq!(e.code, "not_offered", "{name}");
        assert!(e.message.contains(ToolName::Spawn.as_str()), "{}", e.message);
    }
    assert!(parse_call("list_child_processes", Value::Null).is_ok());
}

#[test]
fn spawn_subagent_requires_its_prompt() {
    let e = parse("spawn_subagent", json!({"agent": "researcher"})).expect_err("no prompt");
    assert_eq!(e.code, "invalid_arguments");
    assert!(e.message.contains("prompt"), "{}", e.message);
}
