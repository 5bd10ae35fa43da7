//! What a program's run comes to: its value or its error, its console output, and what it
//! spent.

use serde::Serialize;
use serde_json::Value;

/// How a program ended that did not return a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProgramErrorKind {
    /// The source does not parse.
    Syntax,
    /// The program threw (or awaited a rejected promise, such as a refused tool call) and did
    /// not catch it.
    Exception,
    /// It ran out of fuel.
    FuelExhausted,
    /// It computed longer than its time limit.
    TimeExhausted,
    /// Its interpreter ran out of memory.
    MemoryExhausted,
    /// It wrote more console output than allowed.
    OutputTooLarge,
    /// It returned a value larger than a result may be.
    ResultTooLarge,
    /// It made more tool calls than one program may.
    TooManyCalls,
    /// It awaited something that never settles.
    Unsettled,
    /// Its agent stopped while it ran.
    Abandoned,
    /// The interpreter itself failed.
    Engine,
}

impl ProgramErrorKind {
    /// The kind as it is written in results and events.
    pub fn as_str(self) -> &'static str {
        match self {
            ProgramErrorKind::Syntax => "syntax",
            ProgramErrorKind::Exception => "exception",
            ProgramErrorKind::FuelExhausted => "fuel_exhausted",
            ProgramErrorKind::TimeExhausted => "time_exhausted",
            ProgramErrorKind::MemoryExhausted => "memory_exhausted",
            ProgramErrorKind::OutputTooLarge => "output_too_large",
            ProgramErrorKind::ResultTooLarge => "result_too_large",
            ProgramErrorKind::TooManyCalls => "too_many_calls",
            ProgramErrorKind::Unsettled => "unsettled",
            ProgramErrorKind::Abandoned => "abandoned",
            ProgramErrorKind::Engine => "engine",
        }
    }
}

/// Why a program returned no value, with the program line it happened on when the
/// interpreter names one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProgramError {
    /// How it ended.
    pub kind: ProgramErrorKind,
    /// What happened, in the interpreter's words or the limit's.
    pub message: String,
    /// The line of the program (1 is its first), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The stable code of a refused tool call the program did not catch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_code: Option<String>,
}

impl ProgramError {
    /// An error of `kind`.
    pub fn new(kind: ProgramErrorKind, message: String, line: Option<u32>) -> ProgramError {
        ProgramError { kind, message, line, tool_code: None }
    }

    /// The interpreter itself failed.
    pub fn engine(message: String) -> ProgramError {
        ProgramError::new(ProgramErrorKind::Engine, message, None)
    }

    /// The error as one sentence: where, then what.
    pub fn sentence(&self) -> String {
        match self.line {
            Some(line) => format!("line {line}: {}", self.message),
            None => self.message.clone(),
        }
    }
}

/// A program's end.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramOutcome {
    /// The value it returned, or why it returned none.
    pub result: Result<Value, ProgramError>,
    /// What it wrote with `console.log`, one line per call.
    pub output: String,
    /// The fuel it burned.
    pub fuel: u64,
    /// The tool calls it made.
    pub calls: u32,
}
