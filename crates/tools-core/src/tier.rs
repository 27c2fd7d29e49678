//! Tiers (what a tool may do) and surfaces (who is looking), and the rule joining them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a tool may do to the world, ordered from harmless to powerful (CORE-3).
///
/// The order matters: a surface admits every tier up to its ceiling, and the approval gate
/// asks for everything above `Read`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// No side effects: reading files, asking a server, asking a person.
    Read,
    /// Modifies files in the workspace.
    Write,
    /// Starts or controls a process.
    Exec,
}

impl Tier {
    /// Every tier, from lowest to highest.
    pub const ALL: [Tier; 3] = [Tier::Read, Tier::Write, Tier::Exec];

    /// The lowercase name used in schemas, docs and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Read => "read",
            Tier::Write => "write",
            Tier::Exec => "exec",
        }
    }

    /// Whether a call of this tier passes the approval gate (CORE-5).
    pub fn needs_approval(self) -> bool {
        self > Tier::Read
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who a run's tools are listed to (CORE-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Surface {
    /// The main agent: every tier.
    #[default]
    Full,
    /// Plan mode: reading only.
    Plan,
    /// A read-only subagent: reading only.
    Readonly,
}

impl Surface {
    /// Every surface.
    pub const ALL: [Surface; 3] = [Surface::Full, Surface::Plan, Surface::Readonly];

    /// The highest tier this surface lists and dispatches.
    pub fn ceiling(self) -> Tier {
        match self {
            Surface::Full => Tier::Exec,
            Surface::Plan | Surface::Readonly => Tier::Read,
        }
    }

    /// Whether a tool of `tier` is visible and callable on this surface (CORE-4).
    pub fn allows(self, tier: Tier) -> bool {
        tier <= self.ceiling()
    }

    /// The lowercase name used on the command line and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Full => "full",
            Surface::Plan => "plan",
            Surface::Readonly => "readonly",
        }
    }
}

impl fmt::Display for Surface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Surface {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Surface::ALL
            .into_iter()
            .find(|surface| surface.as_str() == s)
            .ok_or_else(|| format!("unknown surface `{s}`: use one of full, plan, readonly"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_4_read_only_surfaces_admit_only_read() {
        let admitted = |surface: Surface| -> Vec<Tier> {
            Tier::ALL
                .into_iter()
                .filter(|tier| surface.allows(*tier))
                .collect()
        };
        assert_eq!(
            admitted(Surface::Full),
            vec![Tier::Read, Tier::Write, Tier::Exec]
        );
        assert_eq!(admitted(Surface::Plan), vec![Tier::Read]);
        assert_eq!(admitted(Surface::Readonly), vec![Tier::Read]);
    }

    #[test]
    fn core_5_only_write_and_exec_need_approval() {
        let gated: Vec<Tier> = Tier::ALL
            .into_iter()
            .filter(|t| t.needs_approval())
            .collect();
        assert_eq!(gated, vec![Tier::Write, Tier::Exec]);
    }

    #[test]
    fn surface_names_round_trip_and_unknown_names_list_the_valid_ones() {
        for surface in Surface::ALL {
            assert_eq!(surface.as_str().parse::<Surface>(), Ok(surface));
        }
        let err = "planning".parse::<Surface>().unwrap_err();
        assert_eq!(
            err,
            "unknown surface `planning`: use one of full, plan, readonly"
        );
    }
}
