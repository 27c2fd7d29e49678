//! The approval policy: what the gate in dispatch does with write and exec calls (CORE-5).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What happens to a write- or exec-tier call before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalPolicy {
    /// Show a permission card and run only on "allow"; with no approver, refuse (fail closed).
    #[default]
    Ask,
    /// Run without asking.
    Allow,
    /// Refuse every write and exec call.
    Deny,
}

impl ApprovalPolicy {
    /// Every policy.
    pub const ALL: [ApprovalPolicy; 3] = [
        ApprovalPolicy::Ask,
        ApprovalPolicy::Allow,
        ApprovalPolicy::Deny,
    ];

    /// The lowercase name used on the command line and in config.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalPolicy::Ask => "ask",
            ApprovalPolicy::Allow => "allow",
            ApprovalPolicy::Deny => "deny",
        }
    }
}

impl fmt::Display for ApprovalPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ApprovalPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ApprovalPolicy::ALL
            .into_iter()
            .find(|policy| policy.as_str() == s)
            .ok_or_else(|| format!("unknown approval policy `{s}`: use one of ask, allow, deny"))
    }
}
