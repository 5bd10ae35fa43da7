//! Responses-as-code: `run_code` and `run_program` run a program whose tool calls are the
//! turn's calls. Tools come back as values and refusals as thrown errors with their code;
//! failures (syntax, exceptions, limits) are the call's result naming the line and never end
//! the agent; telemetry records the program and each call it made; and one conversation played
//! on the tool-call path and on the code path ends the same way, with the same refusals and
//! the same events.

mod agent_support;

use agent_support::config::CODE;
use agent_support::*;
use agentvisor::actors::store::ProcessQuery;
use agentvisor::actors::{Pid, Status};
use agentvisor::agent::brain::ScriptedTurn;
use agentvisor::agent::telemetry::{AgentEvent, CallRecord, EventRecord};
use serde_json::{Value, json};

/// A turn that runs `code` as its one call.
fn program(code: &str) -> ScriptedTurn {
    ScriptedTurn::call("run_code", json!({"code": code}))
}

/// The calls each `turn_completed` of `pid` recorded, in order.
fn turn_calls(
    host: &agentvisor::agent::run::AgentHost,
    pid: agentvisor::actors::Pid,
) -> Vec<Vec<CallRecord>> {
    events_of(host, pid)
        .into_iter()
        .filter_map(|r| match r.event {
            AgentEvent::TurnCompleted { calls, .. } => Some(calls),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_program_calls_tools_and_gets_their_results_as_values() {
    let code = r#"
        const saved = await write_note({page: "plan", text: "ship on friday"});
        const read = await tools.read_note({page: "plan"});
        console.log("read back:", read.text);
        return {read: read.text, pages: Object.keys(saved).length > 0};
    "#;
    let lead = vec![
        program(code),
        ScriptedTurn::text("done")
            .expect_tool_result("\"result\":{\"pages\":true,\"read\":\"ship on friday\"}")
            .expect_tool_result("\"output\":\"read back: ship on friday\\n\""),
    ];
    let host = host(CODE, Scripts::new().with("lead", lead));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "plan it").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("done"));

    // The turn's record is the program's call, with each call the program made inside it.
    let turns = turn_calls(&host, pid);
    let run = &turns[0][0];
    assert_eq!(run.tool, "run_code");
    assert_eq!(run.arguments["code"], json!(code));
    let made: Vec<(&str, bool)> = run.calls.iter().map(|c| (c.tool.as_str(), c.error.is_none())).collect();
    assert_eq!(made, [("write_note", true), ("read_note", true)]);
    assert_eq!(run.calls[1].result.as_ref().and_then(|r| r.get("text")), Some(&json!("ship on friday")));
    // The note is really written: the module object holds it.
    let notebook = module(&runtime, pid, "agent.notebook");
    assert!(notebook.to_string().contains("ship on friday"), "{notebook}");
}

#[tokio::test]
async fn a_refused_call_throws_an_error_carrying_the_refusals_code() {
    let code = r#"
        try {
            await exec({agent: "stranger"});
            return "not refused";
        } catch (e) {
            return {name: e.name, code: e.code, tool: e.tool, says: e.message.includes("roster")};
        }
    "#;
    let lead = vec![
        program(code),
        ScriptedTurn::text("ok").expect_tool_result(
            "\"result\":{\"code\":\"not_on_roster\",\"name\":\"ToolError\",\"says\":true,\"tool\":\"exec\"}",
        ),
    ];
    let host = host(CODE, Scripts::new().with("lead", lead));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "try").await;
    assert_eq!(done.result(), json!("ok"), "{:?}", done.outcome);
    // The refusal is recorded as on the tool-call path: its event, and the call's error.
    let refused = refusals(&host, pid);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!((refused[0].0.as_str(), refused[0].1.as_str()), ("exec", "not_on_roster"));
    let run = &turn_calls(&host, pid)[0][0];
    assert!(run.error.is_none(), "the program itself succeeded");
    assert_eq!(run.calls[0].error.as_ref().map(|e| e.code.as_str()), Some("not_on_roster"));
}

#[tokio::test]
async fn an_uncaught_refusal_fails_the_program_naming_the_line_and_the_code() {
    let code = "const a = 1;\nawait exec({agent: \"stranger\"});\nreturn a;";
    let lead = vec![
        program(code),
        ScriptedTurn::text("recovered")
            .expect_tool_result("\"code\":\"program_failed\"")
            .expect_tool_result("\"kind\":\"exception\"")
            .expect_tool_result("\"line\":2")
            .expect_tool_result("\"tool_code\":\"not_on_roster\""),
    ];
    let host = host(CODE, Scripts::new().with("lead", lead));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "try").await;
    assert_eq!(done.result(), json!("recovered"), "{:?}", done.outcome);
    let run = &turn_calls(&host, pid)[0][0];
    let error = run.error.as_ref().expect("the program's call failed");
    assert_eq!(error.code, "program_failed");
    assert!(error.message.contains("line 2"), "{}", error.message);
}

#[tokio::test]
async fn syntax_errors_and_thrown_exceptions_name_their_line_and_the_agent_goes_on() {
    let lead = vec![
        program("const x = 1;\nconst y = ;\nreturn x;"),
        program(
            "let total = 0;\nfor (const n of [1, 2]) total += n;\nthrow new RangeError(`too few: ${total}`);",
        )
        .expect_tool_result("\"kind\":\"syntax\"")
        .expect_tool_result("\"line\":2"),
        ScriptedTurn::text("still here")
            .expect_tool_result("\"kind\":\"exception\"")
            .expect_tool_result("\"line\":3")
            .expect_tool_result("RangeError: too few: 3"),
    ];
    let host = host(CODE, Scripts::new().with("lead", lead));
    let runtime = runtime(&host).await;
    let (_, done) = run_root(&host, &runtime, "lead", "try").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("still here"));
}

#[tokio::test]
async fn a_program_that_exceeds_a_limit_is_stopped_and_the_agent_goes_on() {
    let tiny = vec![
        program("let n = 0;\nwhile (true) { n += 1; }"),
        program("const hoard = [];\nwhile (true) { hoard.push(\"x\".repeat(10000) + hoard.length); }")
            .expect_tool_result("\"kind\":\"fuel_exhausted\""),
        program("for (let i = 0; i < 100; i++) console.log(\"line\", i);\nreturn 1;")
            .expect_tool_result("\"kind\":\"memory_exhausted\""),
        program("return \"no clock here: \" + typeof Date + \" \" + typeof fetch + \" \" + typeof require;")
            .expect_tool_result("\"kind\":\"output_too_large\""),
        ScriptedTurn::text("survived").expect_tool_result("no clock here: undefined undefined undefined"),
    ];
    let host = host(CODE, Scripts::new().with("tiny", tiny));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "tiny", "spin").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.result(), json!("survived"));
    let codes: Vec<Option<String>> =
        turn_calls(&host, pid).iter().flatten().map(|c| c.error.as_ref().map(|e| e.code.clone())).collect();
    let failed = Some("program_failed".to_string());
    assert_eq!(codes, [failed.clone(), failed.clone(), failed, None]);
}

#[tokio::test]
async fn a_program_over_the_source_bound_is_refused_naming_the_bound() {
    let long = format!("return 1; // {}", "x".repeat(300_000));
    let lead =
        vec![program(&long), ScriptedTurn::text("shorter next time").expect_tool_result("at most 262144")];
    let host = host(CODE, Scripts::new().with("lead", lead));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "try").await;
    assert_eq!(done.result(), json!("shorter next time"), "{:?}", done.outcome);
    assert_eq!(refusals(&host, pid)[0].1, "invalid_arguments");
}

#[tokio::test]
async fn a_profile_without_code_is_not_offered_it() {
    let plain = vec![program("return 1;"), ScriptedTurn::text("fine").expect_tool_result("not_offered")];
    let (host, requests) = host_recording(CODE, Scripts::new().with("plain", plain));
    let plain_runtime = runtime(&host).await;
    let (_, done) = run_root(&host, &plain_runtime, "plain", "try").await;
    assert_eq!(done.result(), json!("fine"));
    let plain_tools = requests.lock().expect("requests")[0].tools.clone();
    assert!(!plain_tools.iter().any(|t| t == "run_code" || t == "run_program"), "{plain_tools:?}");
    let lead_tools = {
        let (host, requests) =
            host_recording(CODE, Scripts::new().with("lead", vec![ScriptedTurn::text("x")]));
        let lead_runtime = runtime(&host).await;
        run_root(&host, &lead_runtime, "lead", "look").await;
        let asked = requests.lock().expect("requests");
        asked[0].tools.clone()
    };
    for tool in ["run_code", "run_program", "archive_thread", "read_archive"] {
        assert!(lead_tools.iter().any(|t| t == tool), "{tool} not offered: {lead_tools:?}");
    }
}

#[tokio::test]
async fn run_program_runs_a_saved_program_with_its_arguments_and_programs_fetch_each_other() {
    let double = "return {doubled: args.n * 2};";
    let caller = r#"
        const saved = await fetch_program({id: "000000"});
        const again = await run_program({id: "000000", args: {n: 1}}).catch((e) => e.code);
        const body = new Function("args", `return (async () => { ${saved.program.source} })();`);
        return {borrowed: await body({n: 21}), nested: again};
    "#;
    let lead = vec![
        ScriptedTurn::call("save_program", json!({"description": "doubles n", "source": double}))
            .with_call("save_program", json!({"description": "uses the doubler", "source": caller})),
        ScriptedTurn::call("run_program", json!({"id": "000000", "args": {"n": 4}}))
            .expect_tool_result("\"id\":\"000000\"")
            .expect_tool_result("\"id\":\"000001\""),
        ScriptedTurn::call("run_program", json!({"id": "000001"}))
            .expect_tool_result("\"program\":\"000000\"")
            .expect_tool_result("\"result\":{\"doubled\":8}"),
        ScriptedTurn::call("run_program", json!({"id": "nope"})),
        ScriptedTurn::text("done").expect_tool_result("unknown_program"),
    ];
    let host = host(CODE, Scripts::new().with("lead", lead));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "reuse").await;
    assert_eq!(done.result(), json!("done"), "{:?}", done.outcome);
    let refused = refusals(&host, pid);
    let codes: Vec<&str> = refused.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(codes, ["nested_program", "unknown_program"], "{refused:?}");
    let third = &turn_calls(&host, pid)[2][0];
    let report = third.result.as_ref().unwrap_or_else(|| panic!("the program failed: {:?}", third.error));
    assert_eq!(report["program"], json!("000001"), "{report}");
    assert_eq!(
        report["result"],
        json!({"borrowed": {"doubled": 42}, "nested": "nested_program"}),
        "{report}"
    );
}

#[tokio::test]
async fn calls_in_a_program_keep_turn_finality() {
    // In one program: a fork cannot be waited on, the first exec stands and a second is
    // refused, and everything is applied after the program, when the turn ends.
    let code = r#"
        const copy = await fork({prompt: "side"});
        const waited = await wait_for_subagents({ids: [copy.id]}).catch((e) => e.code);
        const first = await exec({agent: "helper", prompt: "carry on"});
        const second = await exec({agent: "worker"}).catch((e) => e.code);
        return {copy: typeof copy.id, waited, first: first.exec, second};
    "#;
    let lead = vec![program(code)];
    let helper = vec![
        ScriptedTurn::text("helped")
            .expect_tool_result("\"waited\":\"fork_not_yet_child\"")
            .expect_tool_result("\"second\":\"succession_declared\"")
            .expect_tool_result("\"first\":\"helper\""),
    ];
    let side = vec![ScriptedTurn::text("side done")];
    let host =
        host(CODE, Scripts::new().with("lead:main", lead).with("lead:side", side).with("helper", helper));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "main").await;
    assert_eq!(done.status, Status::Exited, "{:?}", done.outcome);
    assert_eq!(done.profile(), "helper");
    assert_eq!(done.result(), json!("helped"));
    let kinds: Vec<&str> = events_of(&host, pid).iter().map(|r| r.event.type_name()).collect::<Vec<_>>();
    let spawned = kinds.iter().filter(|k| **k == "agent_spawned").count();
    assert_eq!(spawned, 2, "the root and the exec successor on the root's pid: {kinds:?}");
}

// ---------------------------------------------------------------------------------------------
// One conversation, two paths.

/// One call of a conversation: a tool and its arguments.
type Step = (&'static str, Value);

/// A turn of `steps` as tool calls.
fn as_calls(steps: &[Step]) -> ScriptedTurn {
    let mut turn: Option<ScriptedTurn> = None;
    for (name, args) in steps {
        turn = Some(match turn {
            None => ScriptedTurn::call(*name, args.clone()),
            Some(t) => t.with_call(*name, args.clone()),
        });
    }
    turn.unwrap_or_else(|| ScriptedTurn::text(""))
}

/// The same turn as one program making the same calls in the same order; a refusal is caught
/// so the program goes on, as a turn goes on past a refused call.
fn as_program(steps: &[Step]) -> ScriptedTurn {
    let mut code = String::from("const out = [];\n");
    for (name, args) in steps {
        code.push_str(&format!(
            "try {{ out.push({{ok: await {name}({args})}}); }} catch (e) {{ out.push({{error: e.code}}); }}\n"
        ));
    }
    code.push_str("return out;");
    program(&code)
}

/// What one run of a conversation came to, as comparable across the two paths.
#[derive(Debug, PartialEq)]
struct Observed {
    status: Status,
    profile: String,
    result: Value,
    /// How many children the root launched.
    children: usize,
    /// Every agent's stream, by process in launch order: each event's type and the parts of
    /// it both paths share (not the turn's raw calls, which differ by construction).
    streams: Vec<Vec<Value>>,
    /// Every call made, flattened out of programs: tool and error code.
    calls: Vec<Vec<(String, Option<String>)>>,
}

fn flatten(records: &[CallRecord], into: &mut Vec<(String, Option<String>)>) {
    for record in records {
        if record.tool == "run_code" {
            flatten(&record.calls, into);
        } else {
            into.push((record.tool.clone(), record.error.as_ref().map(|e| e.code.clone())));
        }
    }
}

/// The shared face of an event: its type and content, less what differs by construction: a
/// turn's calls (one program or several calls), the usage that follows from them, and the
/// window's shape (a tool result per call or one per program), so message counts and inherited
/// windows; and the ids, fresh in every run.
fn face(record: &EventRecord) -> Value {
    let text = serde_json::to_string(&record.event).expect("event JSON");
    let mut value: Value = serde_json::from_str(&without_ids(&text)).expect("event JSON");
    if let Some(object) = value.as_object_mut() {
        for key in [
            "usage",
            "calls",
            "tool_calls",
            "text",
            "messages",
            "inherited_messages",
            "inherited",
            "agent_id",
            "to_agent_id",
            "parent_agent_id",
            "message",
        ] {
            object.remove(key);
        }
    }
    value
}

/// Plays `scripts` from a root `lead`. `whole` also observes the root's children (forks), for
/// conversations that collect them before they end; otherwise only how many were launched.
/// `text` with every agent id (a UUID) written `<id>`.
fn without_ids(text: &str) -> String {
    let is_id = |s: &[u8]| {
        s.len() == 36
            && s.iter().enumerate().all(|(i, b)| match i {
                8 | 13 | 18 | 23 => *b == b'-',
                _ => b.is_ascii_hexdigit(),
            })
    };
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if i + 36 <= bytes.len() && is_id(&bytes[i..i + 36]) {
            out.push_str("<id>");
            i += 36;
        } else {
            let c = text[i..].chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

async fn play(scripts: Scripts, whole: bool) -> Observed {
    let host = host(CODE, scripts);
    let runtime = runtime(&host).await;
    let (root, done) = run_root(&host, &runtime, "lead", "main").await;
    let query = ProcessQuery { parent: Some(root), include_terminal: true, ..ProcessQuery::default() };
    let children: Vec<Pid> = runtime.processes(query).expect("children").iter().map(|r| r.pid).collect();
    let mut pids = vec![root];
    if whole {
        pids.extend(&children);
    }
    let streams = pids.iter().map(|pid| events_of(&host, *pid).iter().map(face).collect()).collect();
    let calls = pids
        .iter()
        .map(|pid| {
            let mut flat = Vec::new();
            for turn in turn_calls(&host, *pid) {
                flatten(&turn, &mut flat);
            }
            flat
        })
        .collect();
    Observed {
        status: done.status,
        profile: done.profile(),
        result: done.result(),
        children: children.len(),
        streams,
        calls,
    }
}

/// Plays `turns` (by script key) on both paths and checks they agree; returns one of them.
async fn both_paths(turns: &[(&str, Vec<Vec<Step>>)], sum: Vec<ScriptedTurn>, whole: bool) -> Observed {
    let mut by_calls = Scripts::new().with("brain:sum", sum.clone());
    let mut by_code = Scripts::new().with("brain:sum", sum);
    for (key, script) in turns {
        by_calls = by_calls.with(key, script.iter().map(|t| as_calls(t)).collect());
        by_code = by_code.with(key, script.iter().map(|t| as_program(t)).collect());
    }
    let calls = play(by_calls, whole).await;
    let code = play(by_code, whole).await;
    for (a, b) in calls.streams.iter().flatten().zip(code.streams.iter().flatten()) {
        assert_eq!(a, b, "the two paths' streams disagree");
    }
    assert_eq!(calls, code, "the two paths disagree");
    calls
}

fn finish(result: &str) -> Step {
    ("finish", json!({"result": result}))
}

#[tokio::test]
async fn one_conversation_ends_the_same_on_both_paths_with_exec_fork_and_archive_in_one_turn() {
    let lead = vec![
        vec![("write_note", json!({"page": "plan", "text": "step one"}))],
        vec![("add_task", json!({"title": "ship"}))],
        vec![
            ("archive_thread", json!({"from_turn": 1, "to_turn": 2})),
            ("fork", json!({"prompt": "side"})),
            ("wait_for_subagents", json!({})),
            ("exec", json!({"agent": "helper", "prompt": "carry on"})),
            ("exec", json!({"agent": "worker"})),
            ("archive_thread", json!({"from_turn": 1, "to_turn": 1, "summary": "again"})),
        ],
    ];
    let side = vec![vec![("read_archive", json!({"turn": 1})), finish("side done")]];
    let helper = vec![
        vec![
            ("wait_for_subagents", json!({})),
            ("read_note", json!({"page": "plan"})),
            ("read_archive", json!({"turn": 2})),
        ],
        vec![("archive_thread", json!({"from_turn": 3, "to_turn": 3, "summary": "handed off"}))],
        vec![("read_archive", json!({"turn": 3})), finish("helped")],
    ];
    let seen = both_paths(
        &[("lead:main", lead), ("lead:side", side), ("helper", helper)],
        vec![ScriptedTurn::text("wrote the plan and a task")],
        true,
    )
    .await;
    assert_eq!(seen.status, Status::Exited);
    assert_eq!((seen.profile.as_str(), &seen.result), ("helper", &json!("helped")));

    let root = &seen.calls[0];
    let codes: Vec<Option<&str>> = root.iter().map(|(_, c)| c.as_deref()).collect();
    assert_eq!(
        codes,
        [
            None,
            None,
            None,
            None,
            Some("fork_not_yet_child"),
            None,
            Some("succession_declared"),
            Some("archive_declared"),
            None,
            None,
            None,
            None,
            None,
            None,
        ],
        "{root:?}"
    );
    // The archive was applied before the fork got its copy and before the exec: both read the
    // archived turns back, and the archive event comes first in the root's stream.
    let types: Vec<&str> = seen.streams[0].iter().filter_map(|e| e["type"].as_str()).collect();
    let archived = types.iter().position(|t| *t == "thread_archived").expect("archived");
    let transition = types.iter().position(|t| *t == "agent_transition").expect("transition");
    assert!(archived < transition, "{types:?}");
    let archive = seen.streams[0].iter().find(|e| e["type"] == "thread_archived").expect("archive event");
    assert_eq!(archive["summary"], json!("wrote the plan and a task"));
    assert_eq!((archive["from_turn"].as_u64(), archive["to_turn"].as_u64()), (Some(1), Some(2)));
    assert_eq!(seen.calls.len(), 2, "the root and its fork: {:?}", seen.calls);
    assert_eq!(seen.calls[1], [("read_archive".to_string(), None), ("finish".to_string(), None)]);
}

#[tokio::test]
async fn an_ending_beats_exec_and_forks_still_run_on_both_paths() {
    let lead = vec![vec![
        ("fork", json!({"prompt": "side"})),
        ("exec", json!({"agent": "helper"})),
        finish("ended"),
        ("fork", json!({"prompt": "other"})),
    ]];
    let side = vec![vec![finish("side done")]];
    let other = vec![vec![finish("other done")]];
    let scripts = [("lead:main", lead), ("lead:side", side), ("lead:other", other)];
    let seen = both_paths(&scripts, Vec::new(), false).await;
    assert_eq!((seen.profile.as_str(), &seen.result), ("lead", &json!("ended")));
    assert_eq!(seen.children, 2, "both forks were launched");
    let types: Vec<&str> = seen.streams[0].iter().filter_map(|e| e["type"].as_str()).collect();
    let kinds: Vec<&str> = seen.streams[0].iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds, ["fork", "fork"], "the ending beat the exec: {types:?}");
}

#[tokio::test]
async fn a_program_run_again_draws_the_same_random_numbers() {
    let code = "return [Math.random(), Math.random(), Math.random()];";
    let lead = vec![program(code), program(code), ScriptedTurn::text("done")];
    let host = host(CODE, Scripts::new().with("lead", lead));
    let runtime = runtime(&host).await;
    let (pid, done) = run_root(&host, &runtime, "lead", "roll").await;
    assert_eq!(done.result(), json!("done"), "{:?}", done.outcome);
    let drawn: Vec<Value> = turn_calls(&host, pid)
        .iter()
        .take(2)
        .map(|t| t[0].result.clone().expect("ran")["result"].clone())
        .collect();
    assert_eq!(drawn[0], drawn[1]);
    let numbers = drawn[0].as_array().expect("an array");
    assert!(numbers.iter().all(|n| n.as_f64().is_some_and(|f| (0.0..1.0).contains(&f))), "{numbers:?}");
    assert_ne!(numbers[0], numbers[1]);
}
