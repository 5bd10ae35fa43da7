//! System-prompt templates: text with `{{variable}}` holes, parsed once at the launch check so
//! that rendering (on every request, into the prompt's own slot) cannot fail.
//!
//! The prompt describes the agent it is rendered for: its toolset, its roster, its capability
//! prose and the calls that end its session. It is never a message in the history and never
//! crosses an exec or a fork; each incarnation renders its own.

use std::fmt;

/// A value the renderer fills in. `{{` always opens a variable; single braces are text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PromptVar {
    /// `{{profile}}`: the profile's id.
    Profile,
    /// `{{description}}`: the profile's description (empty if it has none).
    Description,
    /// `{{capabilities}}`: prose on each capability the profile holds.
    Capabilities,
    /// `{{roster}}`: the ids (and descriptions) the agent may delegate to or become.
    Roster,
    /// `{{tools}}`: the agent's toolset.
    Tools,
    /// `{{endings}}`: the calls that end the agent's session.
    Endings,
}

impl PromptVar {
    /// Every variable, in the order the documentation lists them.
    pub const ALL: [PromptVar; 6] = [
        PromptVar::Profile,
        PromptVar::Description,
        PromptVar::Capabilities,
        PromptVar::Roster,
        PromptVar::Tools,
        PromptVar::Endings,
    ];

    /// The name written between the braces.
    pub fn as_str(self) -> &'static str {
        match self {
            PromptVar::Profile => "profile",
            PromptVar::Description => "description",
            PromptVar::Capabilities => "capabilities",
            PromptVar::Roster => "roster",
            PromptVar::Tools => "tools",
            PromptVar::Endings => "endings",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        PromptVar::ALL.into_iter().find(|v| v.as_str() == name)
    }
}

/// The template used when a profile gives no `system_prompt`.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are the agent {{profile}}. {{description}}\n\n\
{{capabilities}}\n\n{{roster}}\n\n{{tools}}\n\n{{endings}}\n";

/// Why a template cannot be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// A `{{` with no `}}` after it.
    #[error("the `{{{{` at byte {offset} is never closed with `}}}}`")]
    Unclosed {
        /// Byte offset of the `{{`.
        offset: usize,
    },
    /// A variable that is not one of [`PromptVar::ALL`].
    #[error("`{{{{{name}}}}}` is not a template variable; the variables are {}", variable_list())]
    UnknownVariable {
        /// The name between the braces, trimmed.
        name: String,
    },
}

fn variable_list() -> String {
    PromptVar::ALL.iter().map(|v| format!("{{{{{}}}}}", v.as_str())).collect::<Vec<_>>().join(", ")
}

/// A piece of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// Literal text.
    Text(String),
    /// A hole for a variable.
    Var(PromptVar),
}

/// A parsed system-prompt template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptTemplate {
    segments: Vec<Segment>,
}

impl PromptTemplate {
    /// Parses a template, naming every error in it (not only the first).
    pub fn parse(text: &str) -> Result<Self, Vec<TemplateError>> {
        let mut segments = Vec::new();
        let mut errors = Vec::new();
        let mut rest = text;
        let mut offset = 0;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                segments.push(Segment::Text(rest[..open].to_owned()));
            }
            let after_open = &rest[open + 2..];
            let Some(close) = after_open.find("}}") else {
                errors.push(TemplateError::Unclosed { offset: offset + open });
                rest = "";
                break;
            };
            let name = after_open[..close].trim();
            match PromptVar::from_name(name) {
                Some(var) => segments.push(Segment::Var(var)),
                None => errors.push(TemplateError::UnknownVariable { name: name.to_owned() }),
            }
            let consumed = open + 2 + close + 2;
            offset += consumed;
            rest = &rest[consumed..];
        }
        if !rest.is_empty() {
            segments.push(Segment::Text(rest.to_owned()));
        }
        if errors.is_empty() { Ok(PromptTemplate { segments }) } else { Err(errors) }
    }

    /// The template's pieces, in order.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Renders the template, asking `value` for each variable.
    pub fn render(&self, mut value: impl FnMut(PromptVar) -> String) -> String {
        let mut out = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Text(text) => out.push_str(text),
                Segment::Var(var) => out.push_str(&value(*var)),
            }
        }
        out
    }
}

impl fmt::Display for PromptTemplate {
    /// The template as text, holes written `{{name}}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for segment in &self.segments {
            match segment {
                Segment::Text(text) => f.write_str(text)?,
                Segment::Var(var) => write!(f, "{{{{{}}}}}", var.as_str())?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_variables_and_text() {
        let t = PromptTemplate::parse("Hi {{ profile }}, {x} {{roster}}").expect("valid template");
        assert_eq!(
            t.segments(),
            [
                Segment::Text("Hi ".into()),
                Segment::Var(PromptVar::Profile),
                Segment::Text(", {x} ".into()),
                Segment::Var(PromptVar::Roster),
            ]
        );
        assert_eq!(t.render(|v| v.as_str().to_uppercase()), "Hi PROFILE, {x} ROSTER");
    }

    #[test]
    fn names_every_error() {
        let errors = PromptTemplate::parse("{{nope}} {{profile}} {{also_not}} {{open").expect_err("invalid");
        assert_eq!(
            errors,
            [
                TemplateError::UnknownVariable { name: "nope".into() },
                TemplateError::UnknownVariable { name: "also_not".into() },
                TemplateError::Unclosed { offset: 34 },
            ]
        );
    }

    #[test]
    fn the_default_parses() {
        assert!(PromptTemplate::parse(DEFAULT_SYSTEM_PROMPT).is_ok());
    }
}
