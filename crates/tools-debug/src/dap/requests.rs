//! The requests we send, one type each, the helix-dap way: a [`Request`] names its command,
//! the arguments it takes and the answer it gets, so the session sends
//! `request::<StackTrace>(arguments)` and reads a `StackTraceResponse`. Arguments carry only
//! the fields we send; answers only the fields we read, every one optional.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::types::{
    Breakpoint, Capabilities, Scope, Source, SourceBreakpoint, StackFrame, Thread, Variable,
};

/// A request of the protocol: its command, its arguments and the body of its answer.
pub(crate) trait Request {
    /// The command, as the protocol spells it.
    const COMMAND: &'static str;
    /// What is sent as `arguments`.
    type Arguments: Serialize + Send;
    /// The answer's `body`. An answer that does not fit reads as its default (see
    /// [`super::body`]), so a response type is `Default`; `()` ignores the body.
    type Response: DeserializeOwned + Default + Send + 'static;
}

/// Declares a request type: `request!(Name, "command", Arguments => Response)`.
macro_rules! request {
    ($(#[$doc:meta])* $name:ident, $command:literal, $arguments:ty => $response:ty) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub(crate) enum $name {}

        impl Request for $name {
            const COMMAND: &'static str = $command;
            type Arguments = $arguments;
            type Response = $response;
        }
    };
}

request!(
    /// The first request: who we are, and what the adapter can do.
    Initialize, "initialize", InitializeArguments => Capabilities
);
request!(
    /// Starts the program (sent before `initialized`, answered after `configurationDone`).
    Launch, "launch", LaunchArguments => ()
);
request!(
    /// Attaches to a debuggee that is already running.
    Attach, "attach", AttachArguments => ()
);
request!(
    /// Replaces the breakpoints of one file.
    SetBreakpoints, "setBreakpoints", SetBreakpointsArguments => SetBreakpointsResponse
);
request!(
    /// Says on which exceptions to stop.
    SetExceptionBreakpoints, "setExceptionBreakpoints", SetExceptionBreakpointsArguments => ()
);
request!(
    /// Ends the configuration: the program may run.
    ConfigurationDone, "configurationDone", NoArguments => ()
);
request!(Threads, "threads", NoArguments => ThreadsResponse);
request!(StackTrace, "stackTrace", StackTraceArguments => StackTraceResponse);
request!(Scopes, "scopes", ScopesArguments => ScopesResponse);
request!(Variables, "variables", VariablesArguments => VariablesResponse);
request!(Evaluate, "evaluate", EvaluateArguments => EvaluateResponse);
request!(Continue, "continue", ThreadArguments => ());
request!(
    /// One step over calls.
    Next, "next", ThreadArguments => ()
);
request!(StepIn, "stepIn", ThreadArguments => ());
request!(StepOut, "stepOut", ThreadArguments => ());
request!(Pause, "pause", ThreadArguments => ());
request!(
    /// Ends the session; with `terminate_debuggee`, the debuggee too.
    Disconnect, "disconnect", DisconnectArguments => ()
);

/// Arguments of a request that takes none: sent as `{}`, which every adapter accepts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct NoArguments {}

/// `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeArguments {
    #[serde(rename = "clientID")]
    pub client_id: String,
    pub client_name: String,
    #[serde(rename = "adapterID")]
    pub adapter_id: String,
    pub locale: String,
    pub lines_start_at1: bool,
    pub columns_start_at1: bool,
    pub path_format: String,
    pub supports_variable_type: bool,
    pub supports_run_in_terminal_request: bool,
    pub supports_start_debugging_request: bool,
}

/// `launch`: what every adapter reads, and what only one does.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LaunchArguments {
    /// `launch`, repeated in the arguments as launch configurations write it.
    pub request: &'static str,
    pub program: String,
    pub args: Vec<String>,
    pub cwd: String,
    pub stop_on_entry: bool,
    #[serde(flatten)]
    pub adapter: AdapterLaunch,
}

/// The part of `launch`'s arguments that belongs to one adapter.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum AdapterLaunch {
    Debugpy(DebugpyLaunch),
    Delve(DelveLaunch),
    /// lldb-dap (and the Dart adapter) need nothing more.
    Plain,
}

/// debugpy's launch options.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DebugpyLaunch {
    /// `python`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub console: &'static str,
    pub just_my_code: bool,
    pub sub_process: bool,
    /// The interpreter, as an argv.
    pub python: Vec<String>,
}

/// delve's launch options.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct DelveLaunch {
    /// `debug` (delve builds the package or file) or `exec` (a binary built already).
    pub mode: &'static str,
}

/// `attach` to a debugpy listening on a port.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AttachArguments {
    /// `attach`, repeated in the arguments as launch configurations write it.
    pub request: &'static str,
    pub connect: Connect,
    pub just_my_code: bool,
}

/// Where `attach` connects.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Connect {
    pub host: String,
    pub port: u16,
}

/// `setBreakpoints`: `breakpoints`, and the older `lines` some adapters still read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetBreakpointsArguments {
    pub source: Source,
    pub breakpoints: Vec<SourceBreakpoint>,
    pub lines: Vec<u32>,
    pub source_modified: bool,
}

/// The answer to `setBreakpoints`, in the order asked.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct SetBreakpointsResponse {
    pub breakpoints: Vec<Breakpoint>,
}

/// `setExceptionBreakpoints`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SetExceptionBreakpointsArguments {
    pub filters: Vec<String>,
}

/// The answer to `threads`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct ThreadsResponse {
    pub threads: Vec<Thread>,
}

/// `stackTrace`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StackTraceArguments {
    pub thread_id: i64,
    pub start_frame: usize,
    pub levels: usize,
}

/// The answer to `stackTrace`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct StackTraceResponse {
    pub stack_frames: Vec<StackFrame>,
    pub total_frames: Option<u64>,
}

/// `scopes`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScopesArguments {
    pub frame_id: i64,
}

/// The answer to `scopes`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct ScopesResponse {
    pub scopes: Vec<Scope>,
}

/// `variables`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VariablesArguments {
    pub variables_reference: i64,
}

/// The answer to `variables`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct VariablesResponse {
    pub variables: Vec<Variable>,
}

/// `evaluate`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EvaluateArguments {
    pub expression: String,
    /// `repl` (debugpy) or `watch`.
    pub context: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_id: Option<i64>,
}

/// The answer to `evaluate`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct EvaluateResponse {
    pub result: String,
    #[serde(rename = "type")]
    pub type_name: Option<String>,
    pub variables_reference: i64,
}

/// `continue`, `next`, `stepIn`, `stepOut` and `pause`: the thread they act on.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadArguments {
    pub thread_id: i64,
}

/// `disconnect`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DisconnectArguments {
    pub terminate_debuggee: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn sent<R: Request>(arguments: R::Arguments) -> Value {
        serde_json::to_value(arguments).unwrap()
    }

    #[test]
    fn initialize_says_who_we_are_as_the_protocol_spells_it() {
        let arguments = InitializeArguments {
            client_id: "agent-tools".into(),
            client_name: "agent-tools".into(),
            adapter_id: "debugpy".into(),
            locale: "en".into(),
            lines_start_at1: true,
            columns_start_at1: true,
            path_format: "path".into(),
            supports_variable_type: true,
            supports_run_in_terminal_request: false,
            supports_start_debugging_request: false,
        };
        assert_eq!(
            sent::<Initialize>(arguments),
            json!({
                "clientID": "agent-tools",
                "clientName": "agent-tools",
                "adapterID": "debugpy",
                "locale": "en",
                "linesStartAt1": true,
                "columnsStartAt1": true,
                "pathFormat": "path",
                "supportsVariableType": true,
                "supportsRunInTerminalRequest": false,
                "supportsStartDebuggingRequest": false,
            })
        );
    }

    #[test]
    fn launch_arguments_carry_each_adapters_own_options() {
        let launch = |adapter| LaunchArguments {
            request: "launch",
            program: "/w/app.py".into(),
            args: vec!["-v".into()],
            cwd: "/w".into(),
            stop_on_entry: false,
            adapter,
        };
        let common = json!({
            "request": "launch", "program": "/w/app.py", "args": ["-v"], "cwd": "/w",
            "stopOnEntry": false,
        });
        let with = |extra: Value| {
            let mut all = common.clone();
            all.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            all
        };
        assert_eq!(
            sent::<Launch>(launch(AdapterLaunch::Debugpy(DebugpyLaunch {
                kind: "python",
                console: "internalConsole",
                just_my_code: true,
                sub_process: false,
                python: vec!["/w/.venv/bin/python".into()],
            }))),
            with(json!({
                "type": "python", "console": "internalConsole", "justMyCode": true,
                "subProcess": false, "python": ["/w/.venv/bin/python"],
            }))
        );
        assert_eq!(
            sent::<Launch>(launch(AdapterLaunch::Delve(DelveLaunch { mode: "debug" }))),
            with(json!({"mode": "debug"}))
        );
        assert_eq!(sent::<Launch>(launch(AdapterLaunch::Plain)), common);
    }

    #[test]
    fn each_request_sends_the_json_the_adapters_read() {
        assert_eq!(
            sent::<Attach>(AttachArguments {
                request: "attach",
                connect: Connect {
                    host: "127.0.0.1".into(),
                    port: 5678
                },
                just_my_code: true,
            }),
            json!({"request": "attach", "connect": {"host": "127.0.0.1", "port": 5678}, "justMyCode": true})
        );
        assert_eq!(
            sent::<SetBreakpoints>(SetBreakpointsArguments {
                source: Source {
                    name: None,
                    path: Some("/w/app.py".into())
                },
                breakpoints: vec![SourceBreakpoint { line: 3 }, SourceBreakpoint { line: 9 }],
                lines: vec![3, 9],
                source_modified: false,
            }),
            json!({
                "source": {"path": "/w/app.py"},
                "breakpoints": [{"line": 3}, {"line": 9}],
                "lines": [3, 9],
                "sourceModified": false,
            })
        );
        assert_eq!(sent::<ConfigurationDone>(NoArguments {}), json!({}));
        assert_eq!(
            sent::<StackTrace>(StackTraceArguments {
                thread_id: 1,
                start_frame: 0,
                levels: 31
            }),
            json!({"threadId": 1, "startFrame": 0, "levels": 31})
        );
        assert_eq!(
            sent::<Evaluate>(EvaluateArguments {
                expression: "x".into(),
                context: "repl",
                frame_id: None
            }),
            json!({"expression": "x", "context": "repl"})
        );
        assert_eq!(
            sent::<Evaluate>(EvaluateArguments {
                expression: "x".into(),
                context: "watch",
                frame_id: Some(4)
            }),
            json!({"expression": "x", "context": "watch", "frameId": 4})
        );
        assert_eq!(
            sent::<Next>(ThreadArguments { thread_id: 2 }),
            json!({"threadId": 2})
        );
        assert_eq!(
            sent::<Disconnect>(DisconnectArguments {
                terminate_debuggee: true
            }),
            json!({"terminateDebuggee": true})
        );
    }

    #[test]
    fn answers_read_only_the_fields_we_use_and_an_odd_one_reads_empty() {
        let trace: StackTraceResponse = super::super::body(json!({
            "stackFrames": [{"id": 1, "name": "main", "line": 3, "column": 1,
                             "source": {"path": "/w/app.py", "sourceReference": 0}}],
            "totalFrames": 9,
        }));
        assert_eq!(trace.total_frames, Some(9));
        assert_eq!(trace.stack_frames[0].line, 3);
        let odd: VariablesResponse = super::super::body(json!({"variables": "no"}));
        assert_eq!(odd, VariablesResponse::default());
    }
}
