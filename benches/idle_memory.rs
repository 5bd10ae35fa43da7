//! Memory per idle live process: RSS growth over N idle processes, divided by N, against the
//! same for N bare ractor actors in the same run. Prints one line per measurement.
//!
//! `cargo bench --bench idle_memory` (N = 100 000; set AGENTVISOR_IDLE_N to change it).

mod common;

use agentvisor::actors::ImageId;
use agentvisor::actors::kernel::launch::LaunchRequest;
use agentvisor::actors::runtime::calls::Call;
use ractor::{Actor, ActorProcessingErr, ActorRef};

struct Idle;

impl Actor for Idle {
    type Msg = ();
    type State = ();
    type Arguments = ();
    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

fn main() {
    let n: usize = std::env::var("AGENTVISOR_IDLE_N").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    match std::env::var("AGENTVISOR_IDLE_MODE").as_deref() {
        Ok("raw") => println!("{}", measure_raw(n)),
        Ok("agentvisor") => println!("{}", measure_agentvisor(n)),
        _ => {
            // Each measurement runs in a fresh process so neither inherits the other's freed heap.
            let run = |mode: &str| -> f64 {
                let exe = std::env::current_exe().expect("own path");
                let out = std::process::Command::new(exe)
                    .env("AGENTVISOR_IDLE_MODE", mode)
                    .env("AGENTVISOR_IDLE_N", n.to_string())
                    .output()
                    .expect("measurement process");
                String::from_utf8_lossy(&out.stdout).trim().parse().expect("a number of bytes")
            };
            let raw = run("raw");
            let ours = run("agentvisor");
            println!("idle_memory/raw_ractor_actor: {:.2} KiB per actor over {n}", raw / 1024.0);
            println!(
                "idle_memory/agentvisor_idle_process: {:.2} KiB per process over {n} (actor, program task, in-memory store row)",
                ours / 1024.0
            );
            println!("idle_memory/ratio: {:.2}x", ours / raw.max(1.0));
        }
    }
}

fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio")
}

/// Bytes of RSS growth per bare ractor actor.
fn measure_raw(n: usize) -> f64 {
    tokio().block_on(async move {
        let before = common::rss_bytes();
        let mut actors = Vec::with_capacity(n);
        for _ in 0..n {
            actors.push(Actor::spawn(None, Idle, ()).await.expect("spawn").0);
        }
        let after = common::rss_bytes();
        (after.saturating_sub(before)) as f64 / n as f64
    })
}

/// Bytes of RSS growth per idle agentvisor process.
fn measure_agentvisor(n: usize) -> f64 {
    tokio().block_on(async move {
        let rt = agentvisor::actors::runtime::Runtime::in_memory(common::options()).await.expect("rt");
        let mut roots = Vec::new();
        for _ in 0..n.div_ceil(10_000) {
            roots.push(common::root(&rt).await);
        }
        let before = common::rss_bytes();
        for i in 0..n {
            let request = LaunchRequest {
                goal: "idle".into(),
                image: Some(ImageId::from("idle")),
                ..LaunchRequest::default()
            };
            rt.call_as(roots[i / 10_000], Call::Spawn(request)).await.expect("spawn");
        }
        let after = common::rss_bytes();
        (after.saturating_sub(before)) as f64 / n as f64
    })
}
