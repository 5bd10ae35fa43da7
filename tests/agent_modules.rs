//! The agent's modules through the public API: every module tool through `run` with JSON
//! arguments (and bad arguments, and tools whose module is not held), the exec module table
//! and the successor's opening note, the modules' serde round trip, the program library's
//! retention, and a property test that no two libraries of a fork/exec tree issue one id.

mod seeded;

use agentvisor::agent::config::{CapabilitySet, CheckedConfig, load_yaml};
use agentvisor::agent::modules::{
    ModuleAction, ModuleError, ModuleKind, ModuleMove, ModuleTool, Modules, ProgramLibrary, TaskStatus,
    ToolOutput, opening_note, plan_transfer,
};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::num::NonZeroU32;

/// `all` holds every module; `bare` only the conversation; `writer` the notebook, memories and
/// a smaller library with longer ids.
const CONFIG: &str = "
brains:
  - {id: b, kind: scripted, script: s}
profiles:
  - id: all
    brain: b
    window_tokens: 1000
    capabilities:
      tasks: true
      notebook: true
      memories: {scope: isolated}
      program_library: {retention_entries: 2, id_length: 4}
  - {id: bare, brain: b, window_tokens: 1000}
  - id: writer
    brain: b
    window_tokens: 1000
    capabilities:
      notebook: true
      memories: {scope: shared}
      program_library: {retention_entries: 1, id_length: 8}
";

fn config() -> CheckedConfig {
    load_yaml(CONFIG).expect("the test configuration passes the launch check")
}

fn caps(config: &CheckedConfig, profile: &str) -> CapabilitySet {
    config.profile(profile).expect("declared").capabilities().clone()
}

fn all_modules() -> Modules {
    Modules::fresh_for(&caps(&config(), "all"))
}

fn call(modules: &mut Modules, tool: &str, args: Value) -> Result<ToolOutput, ModuleError> {
    ModuleTool::parse(tool).expect("a module tool").run(&args, modules)
}

fn ok(modules: &mut Modules, tool: &str, args: Value) -> ToolOutput {
    call(modules, tool, args.clone()).unwrap_or_else(|e| panic!("{tool} {args} refused: {e}"))
}

/// The message of a `bad_arguments` refusal.
fn bad(modules: &mut Modules, tool: &str, args: Value) -> String {
    match call(modules, tool, args.clone()) {
        Err(ModuleError::BadArguments { tool: named, message }) => {
            assert_eq!(named, tool);
            message
        }
        other => panic!("{tool} {args}: expected bad_arguments, got {other:?}"),
    }
}

fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).expect("not zero")
}

// ---------------------------------------------------------------------------------------------
// The tools.

#[test]
fn the_task_tools_add_update_and_list() {
    let mut m = all_modules();
    let out = ok(&mut m, "add_task", json!({"title": "read the spec"}));
    assert_eq!(out.changed, Some(ModuleKind::Tasks));
    assert_eq!(
        out.result,
        json!({"task": {"id": 1, "title": "read the spec", "status": "open", "note": null}})
    );
    ok(&mut m, "add_task", json!({"title": "write it", "note": "after reading"}));

    let out = ok(&mut m, "update_task", json!({"id": 1, "status": "in_progress", "note": "half way"}));
    assert_eq!(out.changed, Some(ModuleKind::Tasks));
    assert_eq!(out.result["task"]["status"], "in_progress");
    assert_eq!(out.result["task"]["note"], "half way");
    let out = ok(&mut m, "update_task", json!({"id": 1, "note": ""}));
    assert_eq!(out.result["task"]["note"], Value::Null, "an empty note clears it");
    assert_eq!(out.result["task"]["status"], "in_progress", "a status left out stays");
    assert_eq!(ok(&mut m, "update_task", json!({"id": 1})).changed, None, "nothing to change");

    let out = ok(&mut m, "list_tasks", json!({}));
    assert_eq!(out.changed, None);
    let ids: Vec<&Value> = out.result["tasks"].as_array().expect("a list").iter().map(|t| &t["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2)]);
    assert_eq!(ok(&mut m, "list_tasks", Value::Null).result, out.result, "null stands for no arguments");

    let tasks = m.tasks.as_ref().expect("held");
    assert_eq!(tasks.tasks()[0].status, TaskStatus::InProgress);
    assert_eq!(tasks.tasks()[1].note.as_deref(), Some("after reading"));

    let err = call(&mut m, "update_task", json!({"id": 9, "status": "done"})).expect_err("no task 9");
    assert_eq!(err, ModuleError::UnknownTask { id: 9 });
    assert_eq!(err.code(), "unknown_task");
    let err = call(&mut m, "add_task", json!({"title": ""})).expect_err("empty title");
    assert_eq!(err.code(), "empty");
}

#[test]
fn the_task_tools_name_the_field_of_bad_arguments() {
    let mut m = all_modules();
    assert!(bad(&mut m, "add_task", json!({})).contains("title"));
    assert!(bad(&mut m, "add_task", json!({"title": 3})).contains("title: "));
    assert!(bad(&mut m, "add_task", json!({"title": "t", "priority": 1})).contains("priority"));
    assert!(bad(&mut m, "update_task", json!({"id": "one"})).contains("id: "));
    assert!(bad(&mut m, "update_task", json!({"id": 1, "status": "finished"})).contains("status: "));
    assert!(bad(&mut m, "list_tasks", json!({"all": true})).contains("all"));
    assert!(
        bad(&mut m, "list_tasks", json!([]))
            .contains("expected a JSON object of list_tasks's parameters, found an array")
    );
    assert!(bad(&mut m, "add_task", json!("read the spec")).contains("found a string"));
    let err = call(&mut m, "add_task", json!({"title": 3})).expect_err("bad");
    assert_eq!(err.code(), "bad_arguments");
    assert!(err.to_string().starts_with("bad arguments to add_task: "), "{err}");
    assert!(m.tasks.as_ref().expect("held").is_empty(), "a refused call changes nothing");
}

#[test]
fn the_notebook_tools_write_append_read_and_list() {
    let mut m = all_modules();
    let out = ok(&mut m, "write_note", json!({"page": "plan", "text": "one"}));
    assert_eq!(
        out,
        ToolOutput { result: json!({"page": "plan", "bytes": 3}), changed: Some(ModuleKind::Notebook) }
    );
    ok(&mut m, "write_note", json!({"page": "plan", "text": ", two", "append": true}));
    ok(&mut m, "write_note", json!({"page": "appendix", "text": "new", "append": true}));
    assert_eq!(
        ok(&mut m, "read_note", json!({"page": "plan"})).result,
        json!({"page": "plan", "text": "one, two"})
    );
    ok(&mut m, "write_note", json!({"page": "appendix", "text": "replaced"}));

    let out = ok(&mut m, "list_notes", json!({}));
    assert_eq!(out.changed, None);
    assert_eq!(
        out.result,
        json!({"pages": [{"page": "appendix", "bytes": 8}, {"page": "plan", "bytes": 8}]})
    );
    let notebook = m.notebook.as_ref().expect("held");
    assert_eq!(notebook.read("appendix"), Some("replaced"));
    assert_eq!(notebook.pages().count(), 2);

    let err = call(&mut m, "read_note", json!({"page": "nope"})).expect_err("no such page");
    assert_eq!(err.code(), "unknown_page");
    assert!(err.to_string().contains("list_notes"), "{err}");
    assert!(
        bad(&mut m, "write_note", json!({"page": "p", "text": "t", "append": "yes"})).contains("append: ")
    );
    assert!(bad(&mut m, "write_note", json!({"page": "p"})).contains("text"));
    assert!(bad(&mut m, "read_note", json!({"name": "plan"})).contains("name"));
    let err = call(&mut m, "write_note", json!({"page": "big", "text": "x".repeat(64 * 1024 + 1)}));
    assert_eq!(err.expect_err("too long").code(), "too_large");
}

#[test]
fn the_memory_tools_remember_recall_and_forget() {
    let mut m = all_modules();
    let out = ok(&mut m, "remember", json!({"key": "style", "text": "short sentences"}));
    assert_eq!(
        out,
        ToolOutput {
            result: json!({"key": "style", "replaced": false}),
            changed: Some(ModuleKind::Memories)
        }
    );
    assert_eq!(
        ok(&mut m, "remember", json!({"key": "style", "text": "plain words"})).result["replaced"],
        true
    );
    assert_eq!(
        ok(&mut m, "recall", json!({"key": "style"})),
        ToolOutput { result: json!({"key": "style", "text": "plain words"}), changed: None }
    );
    assert_eq!(m.memories.as_ref().expect("held").entries().collect::<Vec<_>>(), [("style", "plain words")]);

    let out = ok(&mut m, "forget", json!({"key": "style"}));
    assert_eq!(
        out,
        ToolOutput {
            result: json!({"key": "style", "forgotten": true}),
            changed: Some(ModuleKind::Memories)
        }
    );
    let out = ok(&mut m, "forget", json!({"key": "style"}));
    assert_eq!(out, ToolOutput { result: json!({"key": "style", "forgotten": false}), changed: None });
    assert_eq!(
        call(&mut m, "recall", json!({"key": "style"})).expect_err("forgotten").code(),
        "unknown_memory"
    );

    assert!(bad(&mut m, "remember", json!({"key": "k"})).contains("text"));
    assert!(bad(&mut m, "remember", json!({"key": "k", "text": ["a"]})).contains("text: "));
    assert!(bad(&mut m, "recall", json!({"key": 1})).contains("key: "));
    assert!(bad(&mut m, "forget", json!({"key": "k", "all": true})).contains("all"));
    assert_eq!(
        call(&mut m, "remember", json!({"key": "", "text": "t"})).expect_err("empty key").code(),
        "empty"
    );
}

#[test]
fn the_program_tools_save_fetch_and_list_with_eviction() {
    let mut m = all_modules();
    let out = ok(&mut m, "save_program", json!({"description": "adds", "source": "a + b"}));
    assert_eq!(
        out,
        ToolOutput {
            result: json!({"id": "0000", "evicted": []}),
            changed: Some(ModuleKind::ProgramLibrary)
        }
    );
    ok(&mut m, "save_program", json!({"description": "subtracts", "source": "a - b"}));
    // The library of `all` keeps two programs: the third evicts the first.
    let out = ok(&mut m, "save_program", json!({"description": "multiplies", "source": "a * b"}));
    assert_eq!(out.result, json!({"id": "0002", "evicted": ["0000"]}));

    let out = ok(&mut m, "fetch_program", json!({"id": "0001"}));
    assert_eq!(out.changed, None);
    assert_eq!(out.result, json!({"program": {"id": "0001", "description": "subtracts", "source": "a - b"}}));
    let out = ok(&mut m, "list_programs", json!({}));
    assert_eq!(
        out.result,
        json!({
            "programs": [{"id": "0001", "description": "subtracts"}, {"id": "0002", "description": "multiplies"}],
            "retention_entries": 2,
        })
    );
    let err = call(&mut m, "fetch_program", json!({"id": "0000"})).expect_err("evicted");
    assert_eq!(err, ModuleError::UnknownProgram { id: "0000".into() });
    assert_eq!(err.code(), "unknown_program");

    assert!(bad(&mut m, "save_program", json!({"source": "s"})).contains("description"));
    assert!(bad(&mut m, "fetch_program", json!({"id": 1})).contains("id: "));
    assert!(bad(&mut m, "list_programs", json!({"all": 1})).contains("all"));
    let err = call(&mut m, "save_program", json!({"description": "d", "source": "x".repeat(64 * 1024 + 1)}))
        .expect_err("too long");
    assert!(matches!(err, ModuleError::TooLarge { what: "program source", .. }), "{err:?}");
    assert_eq!(m.library.as_ref().expect("held").issued_count(), 3, "a refused save issues nothing");
}

#[test]
fn a_tool_whose_module_is_not_held_is_refused() {
    let config = config();
    let mut bare = Modules::fresh_for(&caps(&config, "bare"));
    assert_eq!(bare, Modules::default());
    for tool in ModuleTool::ALL {
        let err = tool.run(&json!({}), &mut bare).expect_err("nothing held");
        assert_eq!(err, ModuleError::NotHeld { tool: tool.name(), capability: tool.capability() });
        assert_eq!(err.code(), "not_held");
        assert!(err.to_string().contains(tool.capability().as_str()), "{err}");
    }
    let mut writer = Modules::fresh_for(&caps(&config, "writer"));
    assert!(call(&mut writer, "list_notes", json!({})).is_ok());
    assert_eq!(
        call(&mut writer, "add_task", json!({"title": "t"})).expect_err("no tasks").code(),
        "not_held"
    );
}

#[test]
fn tool_names_parse_and_specs_follow_the_capabilities() {
    let names: Vec<&str> = ModuleTool::ALL.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "add_task",
            "update_task",
            "list_tasks",
            "write_note",
            "read_note",
            "list_notes",
            "remember",
            "recall",
            "forget",
            "save_program",
            "fetch_program",
            "list_programs"
        ]
    );
    for tool in ModuleTool::ALL {
        assert_eq!(ModuleTool::parse(tool.name()), Some(tool));
        let spec = tool.spec();
        assert_eq!(spec.name, tool.name());
        assert!(!spec.description.is_empty());
        let p = &spec.parameters;
        assert_eq!(p["type"], "object");
        assert_eq!(p["additionalProperties"], false);
        let properties = p["properties"].as_object().expect("properties");
        for required in p["required"].as_array().expect("required") {
            assert!(
                properties.contains_key(required.as_str().expect("a name")),
                "{}: {required}",
                tool.name()
            );
        }
    }
    assert_eq!(ModuleTool::parse("spawn_subagent"), None);

    let config = config();
    assert_eq!(ModuleTool::specs_for(&caps(&config, "all")).len(), 12);
    assert!(ModuleTool::specs_for(&caps(&config, "bare")).is_empty());
    let writer: Vec<String> =
        ModuleTool::specs_for(&caps(&config, "writer")).into_iter().map(|s| s.name).collect();
    assert_eq!(
        writer,
        [
            "write_note",
            "read_note",
            "list_notes",
            "remember",
            "recall",
            "forget",
            "save_program",
            "fetch_program",
            "list_programs"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// The exec module table.

fn mv(module: ModuleKind, action: ModuleAction) -> ModuleMove {
    ModuleMove { module, action }
}

#[test]
fn the_table_transfers_drops_and_starts_fresh() {
    use ModuleAction::{Dropped, Fresh, Transferred};
    use ModuleKind::{History, Memories, Notebook, ProgramLibrary, Tasks};
    let config = config();
    let (all, bare, writer) = (caps(&config, "all"), caps(&config, "bare"), caps(&config, "writer"));

    assert_eq!(
        plan_transfer(&all, &writer),
        [
            mv(History, Transferred),
            mv(Tasks, Dropped),
            mv(Notebook, Transferred),
            mv(Memories, Transferred),
            mv(ProgramLibrary, Transferred)
        ]
    );
    assert_eq!(
        plan_transfer(&bare, &writer),
        [mv(History, Transferred), mv(Notebook, Fresh), mv(Memories, Fresh), mv(ProgramLibrary, Fresh)],
        "tasks, held by neither, has no row"
    );
    assert_eq!(plan_transfer(&bare, &bare), [mv(History, Transferred)]);
    assert_eq!(plan_transfer(&writer, &bare).iter().filter(|m| m.action == Dropped).count(), 3);

    assert_eq!(ModuleAction::Transferred.as_str(), "transferred");
    assert_eq!(ModuleAction::Dropped.as_str(), "dropped");
    assert_eq!(ModuleAction::Fresh.as_str(), "fresh");
    let names: Vec<&str> = ModuleKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(names, ["history", "tasks", "notebook", "memories", "program_library"]);
    assert_eq!(
        serde_json::to_value(mv(ProgramLibrary, Fresh)).expect("serializes"),
        json!({"module": "program_library", "action": "fresh"})
    );
}

#[test]
fn applying_a_transfer_keeps_drops_and_inits_the_contents() {
    let config = config();
    let mut m = all_modules();
    ok(&mut m, "add_task", json!({"title": "t"}));
    ok(&mut m, "write_note", json!({"page": "p", "text": "kept"}));
    ok(&mut m, "remember", json!({"key": "k", "text": "kept"}));
    ok(&mut m, "save_program", json!({"description": "old", "source": "1"}));
    ok(&mut m, "save_program", json!({"description": "new", "source": "2"}));

    let moves = m.apply_transfer(&caps(&config, "writer"));
    assert_eq!(moves, plan_transfer(&caps(&config, "all"), &caps(&config, "writer")));
    assert_eq!(m.tasks, None);
    assert_eq!(m.notebook.as_ref().and_then(|n| n.read("p")), Some("kept"));
    assert_eq!(m.memories.as_ref().and_then(|n| n.recall("k")), Some("kept"));
    let library = m.library.as_ref().expect("transferred");
    let kept: Vec<&str> = library.programs().map(|p| p.description.as_str()).collect();
    assert_eq!(kept, ["new"], "the writer keeps one program: the oldest is trimmed");
    assert_eq!((library.retention_entries().get(), library.id_length()), (1, 8));
    let out = ok(&mut m, "save_program", json!({"description": "longer id", "source": "3"}));
    assert_eq!(out.result["id"], "00000002", "the numbers go on, at the new width");

    let moves = m.apply_transfer(&caps(&config, "all"));
    assert!(moves.contains(&mv(ModuleKind::Tasks, ModuleAction::Fresh)));
    assert_eq!(m.tasks.as_ref().map(|t| t.is_empty()), Some(true));
    let moves = m.apply_transfer(&caps(&config, "bare"));
    assert_eq!(moves.len(), 5);
    assert_eq!(m, Modules::default());
}

#[test]
fn the_opening_note_says_who_what_came_across_what_was_dropped_and_what_is_fresh() {
    use ModuleAction::{Dropped, Fresh, Transferred};
    use ModuleKind::{History, Memories, Notebook, ProgramLibrary, Tasks};
    let moves = [
        mv(History, Transferred),
        mv(Tasks, Transferred),
        mv(Notebook, Dropped),
        mv(Memories, Fresh),
        mv(ProgramLibrary, Fresh),
    ];
    let note =
        opening_note(&moves, "reviewer", "writer", Some(("review", "read")), None, Some("Check chapter 2."));
    assert!(note.contains("You are now reviewer"), "{note}");
    assert!(note.contains("you were writer"), "{note}");
    assert!(
        note.contains("Came across with their contents: your conversation history and your task list."),
        "{note}"
    );
    assert!(note.contains("Dropped, and their contents are gone: your notebook."), "{note}");
    assert!(note.contains("no memories and an empty program library"), "{note}");
    assert!(note.contains("machine review at its entry state read; move on with transition_state"), "{note}");
    assert!(note.ends_with("\n\nCheck chapter 2."), "{note}");

    let fresh = [mv(History, Transferred), mv(Tasks, Fresh), mv(Notebook, Fresh)];
    let note = opening_note(&fresh, "b", "a", None, None, None);
    assert!(note.contains("an empty task list and an empty notebook"), "{note}");
    assert!(!note.contains("Dropped"), "{note}");
    assert!(!note.contains("machine"), "{note}");
    assert!(note.ends_with('.'), "{note}");
}

// ---------------------------------------------------------------------------------------------
// Serde and the library.

#[test]
fn modules_round_trip_through_json() {
    let mut m = all_modules();
    ok(&mut m, "add_task", json!({"title": "t", "note": "n"}));
    ok(&mut m, "update_task", json!({"id": 1, "status": "dropped"}));
    ok(&mut m, "write_note", json!({"page": "p", "text": "text \"quoted\" \u{1f600}"}));
    ok(&mut m, "remember", json!({"key": "k", "text": "v"}));
    ok(&mut m, "save_program", json!({"description": "d", "source": "s"}));
    let mut copy = m.clone();
    let forked = copy.library.as_mut().expect("held").fork();

    for modules in [m, Modules::default(), Modules { library: Some(forked), ..Modules::default() }] {
        let text = serde_json::to_string(&modules).expect("serializes");
        let back: Modules = serde_json::from_str(&text).expect("deserializes");
        assert_eq!(back, modules, "{text}");
    }
    assert_eq!(serde_json::to_value(TaskStatus::InProgress).expect("serializes"), json!("in_progress"));
}

#[test]
fn the_library_trims_to_its_retention() {
    let mut library = ProgramLibrary::new(nz(3), 4);
    for n in 0..5 {
        library.save(format!("p{n}"), String::new()).expect("ids left");
    }
    let ids: Vec<&str> = library.programs().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["0002", "0003", "0004"]);
    assert_eq!(library.issued_count(), 5);
    assert_eq!(library.fetch("0003").map(|p| p.description.as_str()), Some("p3"));
    assert!(library.fetch("0000").is_none());

    library.reresolve(nz(1), 5);
    let ids: Vec<&str> = library.programs().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["0004"]);
    assert_eq!(library.save("p5".into(), String::new()).expect("ids left").id, "00005");
}

#[test]
fn ids_are_base_36_and_exhaustion_is_a_typed_refusal() {
    let mut library = ProgramLibrary::new(nz(64), 1);
    let ids: String =
        (0..36).map(|_| library.save(String::new(), String::new()).expect("fits").id.clone()).collect();
    assert_eq!(ids, "0123456789abcdefghijklmnopqrstuvwxyz");
    let err = library.save(String::new(), String::new()).expect_err("37 does not fit in one digit");
    assert_eq!(err, ModuleError::LibraryIdsExhausted { id_length: 1 });
    assert_eq!(err.code(), "library_ids_exhausted");
    library.reresolve(nz(64), 2);
    assert_eq!(library.save(String::new(), String::new()).expect("fits").id, "10", "36 was not spent");

    assert!(ProgramLibrary::new(nz(1), 0).save(String::new(), String::new()).is_err());

    // Every fork doubles the forker's stride; from the 64th on, the copies get no numbers.
    let mut library = ProgramLibrary::new(nz(1), 16);
    let mut last = library.fork();
    for _ in 0..70 {
        last = library.fork();
    }
    assert_eq!(
        last.save(String::new(), String::new()).expect_err("nothing left").code(),
        "library_ids_exhausted"
    );
    assert_eq!(
        library.save(String::new(), String::new()).expect("the forker keeps 0").id,
        "0000000000000000"
    );
}

#[test]
fn a_fork_and_its_forker_issue_different_ids() {
    let mut a = ProgramLibrary::new(nz(8), 4);
    a.save("kept".into(), "1".into()).expect("ids left");
    let mut b = a.fork();
    assert_eq!(b.programs().collect::<Vec<_>>(), a.programs().collect::<Vec<_>>(), "same entries");
    let ia: Vec<String> =
        (0..3).map(|_| a.save(String::new(), String::new()).expect("ok").id.clone()).collect();
    let ib: Vec<String> =
        (0..3).map(|_| b.save(String::new(), String::new()).expect("ok").id.clone()).collect();
    assert_eq!(ia, ["0001", "0003", "0005"]);
    assert_eq!(ib, ["0002", "0004", "0006"]);
}

// ---------------------------------------------------------------------------------------------
// No id is issued twice in a tree of forks and execs.

#[derive(Clone, Debug)]
enum Op {
    Issue(usize),
    Fork(usize),
    Exec(usize, u32, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<usize>().prop_map(Op::Issue),
        2 => any::<usize>().prop_map(Op::Fork),
        1 => (any::<usize>(), 1..=8u32, 4..=16u8).prop_map(|(i, r, l)| Op::Exec(i, r, l)),
    ]
}

fn run_tree(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut libraries = vec![ProgramLibrary::new(nz(4), 4)];
    let mut issued: HashSet<String> = HashSet::new();
    for op in ops {
        let count = libraries.len();
        match op {
            Op::Issue(i) => match libraries[i % count].save(String::new(), String::new()) {
                Ok(program) => {
                    let id = program.id.clone();
                    prop_assert!(issued.insert(id.clone()), "id {id} issued twice");
                }
                Err(ModuleError::LibraryIdsExhausted { .. }) => {}
                Err(e) => return Err(TestCaseError::fail(format!("unexpected refusal: {e}"))),
            },
            Op::Fork(i) => {
                let copy = libraries[i % count].fork();
                libraries.push(copy);
            }
            Op::Exec(i, retention, id_length) => libraries[i % count].reresolve(nz(retention), id_length),
        }
    }
    for library in &libraries {
        prop_assert!(library.programs().len() <= library.retention_entries().get() as usize);
        prop_assert!(library.programs().all(|p| issued.contains(&p.id)));
    }
    Ok(())
}

#[test]
fn no_two_libraries_of_a_fork_and_exec_tree_issue_the_same_id() {
    let seed = seeded::seed("agent_modules", "AGENT_MODULES_SEED", 0x0006_1b2a_7c3d);
    let mut runner = seeded::runner_from(seed, 256);
    runner.run(&prop::collection::vec(op(), 1..200), run_tree).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
}
