//! `agent_tools._native`: the Python extension module, a thin layer over the umbrella crate.
//!
//! A run is built exactly as `agent-tools serve` builds one ([`Settings::load`] then
//! [`Settings::dispatcher`]); calls go through its [`Dispatcher`] on one process-wide tokio
//! runtime with the GIL released. JSON crosses the boundary as text: the Python half
//! (`python/agent_tools/__init__.py`) turns it into dicts, so this side knows no Python types
//! beyond strings, bytes and tuples.

mod definitions;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agent_tools::{RunOptions, Settings};
use futures::future::BoxFuture;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use tokio_util::sync::CancellationToken;
use tools_core::{
    Answer, ApprovalPolicy, CallOptions, Card, CardKind, Dispatcher, Progress, ProgressSink,
    QuestionPort, Surface, ToolCall,
};

/// The one runtime every run of this process shares; its worker threads live as long as the
/// process, so nothing a call starts is tied to a Python thread.
fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::io::Result<tokio::runtime::Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            // A fallback is never silent: without PID namespaces, what a child detaches may
            // outlive a SIGKILLed interpreter.
            let containment = tools_process::containment();
            if !containment.is_active() {
                eprintln!("agent-tools: {}", containment.describe());
            }
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("agent-tools")
                .build()
        })
        .as_ref()
        .map_err(|error| {
            PyRuntimeError::new_err(format!("cannot start the async runtime: {error}"))
        })
}

/// Runs still open in this process. `tools_process::shutdown_all` ends every process group of
/// the process, so it runs only when the last one closes: closing one run must not kill the
/// language servers of another.
static OPEN_RUNS: AtomicUsize = AtomicUsize::new(0);

fn runtime_error(error: anyhow::Error) -> PyErr {
    PyRuntimeError::new_err(format!("{error:#}"))
}

/// How often a blocking call looks for a Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// A handle that cancels a call from another thread (what `acall` uses when its task is
/// cancelled): the tool is told, as an MCP client's `notifications/cancelled` tells it.
#[pyclass(module = "agent_tools._native")]
#[derive(Default)]
struct Cancel {
    token: CancellationToken,
}

#[pymethods]
impl Cancel {
    #[new]
    fn new() -> Self {
        Cancel::default()
    }

    /// Cancels the call this handle was given to (or the next one, if it has not started).
    fn cancel(&self) {
        self.token.cancel();
    }

    /// Whether `cancel` was called.
    #[getter]
    fn cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}

/// A run: a dispatcher over one workspace, built as `serve` builds it.
#[pyclass(module = "agent_tools._native", name = "NativeRun")]
struct NativeRun {
    /// `None` once closed.
    dispatcher: Mutex<Option<Dispatcher>>,
    shutdown_bound: Duration,
}

#[pymethods]
impl NativeRun {
    #[new]
    #[pyo3(signature = (root, surface, approval, config, ask, vibe, state_dir))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        root: PathBuf,
        surface: &str,
        approval: Option<&str>,
        config: Option<PathBuf>,
        ask: Option<Py<PyAny>>,
        vibe: bool,
        state_dir: Option<PathBuf>,
    ) -> PyResult<Self> {
        let surface: Surface = surface
            .parse()
            .map_err(|error| PyValueError::new_err(format!("surface {surface:?}: {error}")))?;
        let approval: Option<ApprovalPolicy> = approval
            .map(|approval| {
                approval.parse().map_err(|error| {
                    PyValueError::new_err(format!("approval {approval:?}: {error}"))
                })
            })
            .transpose()?;
        let options = RunOptions {
            root,
            config,
            surface,
            approval,
            vibe,
            state_dir,
        };
        // With no callback there is no question port, as over MCP without elicitation:
        // `ask_user` is absent and approval fails closed.
        let port = ask.map(|callback| {
            Arc::new(PythonPort {
                callback: Arc::new(callback),
            }) as Arc<dyn QuestionPort>
        });
        let runtime = runtime()?;
        let (dispatcher, shutdown_bound) = py
            .detach(|| {
                // Supervisors are built inside the runtime: they may start tasks.
                let _entered = runtime.enter();
                let mut settings = Settings::load(&options)?;
                settings.how_to_allow = "create the Run with `approval=\"allow\"`".to_owned();
                let dispatcher = settings.dispatcher(port)?;
                anyhow::Ok((dispatcher, settings.shutdown_bound))
            })
            .map_err(runtime_error)?;
        OPEN_RUNS.fetch_add(1, Ordering::SeqCst);
        Ok(NativeRun {
            dispatcher: Mutex::new(Some(dispatcher)),
            shutdown_bound,
        })
    }

    /// The tools the run's surface lists, as a JSON array of specs.
    fn tools(&self) -> PyResult<String> {
        let dispatcher = self.dispatcher()?;
        serde_json::to_string(&dispatcher.tools())
            .map_err(|error| PyRuntimeError::new_err(error.to_string()))
    }

    /// The tools in the shape `format` takes, as a JSON array; `strict`: OpenAI's strict mode.
    #[pyo3(signature = (format, strict=false))]
    fn tool_definitions(&self, format: &str, strict: bool) -> PyResult<String> {
        let dispatcher = self.dispatcher()?;
        // Made from the tools as MCP lists them, as a remote run's are (`tool_definitions`).
        let listed = dispatcher
            .tools()
            .into_iter()
            .map(|spec| serde_json::to_value(agent_tools::mcp_tool(spec)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| PyRuntimeError::new_err(error.to_string()))?;
        let definitions = definitions::definitions(&listed, format, strict)?;
        serde_json::to_string(&definitions)
            .map_err(|error| PyRuntimeError::new_err(error.to_string()))
    }

    /// Runs one call with the GIL released; returns (text, structured JSON or None, PNG
    /// images, is_error). `cancel` cancels it from another thread; Ctrl-C (a signal the main
    /// thread receives) cancels it too, and raises once the call has ended. `progress` is
    /// called on this thread with (message, done, total) for each report the tool makes.
    #[pyo3(signature = (name, arguments, cancel=None, progress=None))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        name: String,
        arguments: &str,
        cancel: Option<PyRef<'py, Cancel>>,
        progress: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(String, Option<String>, Bound<'py, PyList>, bool)> {
        let arguments: serde_json::Value = serde_json::from_str(arguments).map_err(|error| {
            PyValueError::new_err(format!("the arguments are not JSON: {error}"))
        })?;
        // An ask callback runs on one of the runtime's threads, where blocking on the runtime
        // would panic; a call from there is refused in words instead.
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(PyRuntimeError::new_err(
                "a call cannot be made from inside an ask callback; answer the card, and make \
                 the call after the one waiting on it returns",
            ));
        }
        let dispatcher = self.dispatcher()?;
        let runtime = runtime()?;
        let call = ToolCall { name, arguments };
        let token = cancel
            .map(|cancel| cancel.token.clone())
            .unwrap_or_default();
        // Reports are queued by the tool and handed to the callback here, with the GIL, so
        // no runtime worker ever waits for the GIL.
        let (reports, reported) = std::sync::mpsc::channel::<Progress>();
        let sink: Option<ProgressSink> = progress.is_some().then(|| {
            Arc::new(move |report: Progress| {
                let _ = reports.send(report);
            }) as ProgressSink
        });
        let options = CallOptions {
            cancel: Some(token.clone()),
            progress: sink,
            asker: None,
        };
        let deliver = |py: Python<'py>| {
            let Some(callback) = &progress else { return };
            for report in reported.try_iter() {
                if let Err(error) = callback.call1((report.message, report.done, report.total)) {
                    // A failing progress callback must not fail the call.
                    error.print(py);
                }
            }
        };
        // The call runs on the runtime's workers, not on this thread, so a Python thread
        // ending never touches what the call started.
        let mut task = runtime.spawn(async move { dispatcher.dispatch_with(call, options).await });
        let mut interrupted = None;
        let joined = loop {
            // Wake now and then with the GIL, so a Ctrl-C is seen while the tool runs.
            let waited = py.detach(|| {
                runtime.block_on(async { tokio::time::timeout(SIGNAL_POLL, &mut task).await.ok() })
            });
            deliver(py);
            if let Some(joined) = waited {
                break joined;
            }
            if interrupted.is_none()
                && let Err(error) = py.check_signals()
            {
                token.cancel();
                interrupted = Some(error);
            }
        };
        if let Some(error) = interrupted {
            return Err(error);
        }
        let result = joined.map_err(|error| {
            PyRuntimeError::new_err(format!("the call's task ended abnormally: {error}"))
        })?;
        let structured = result
            .structured
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|error| PyRuntimeError::new_err(error.to_string()))?;
        let images = PyList::empty(py);
        for image in &result.images {
            images.append(PyBytes::new(py, &image.data))?;
        }
        Ok((result.text, structured, images, result.is_error))
    }

    /// Whether the run has been closed.
    #[getter]
    fn closed(&self) -> bool {
        self.lock().is_none()
    }

    /// Ends the run: cancels running calls, stops every server, kernel, adapter and worker it
    /// started, then (when no other run is open) kills any process group left. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let Some(dispatcher) = self.lock().take() else {
            return Ok(());
        };
        let runtime = runtime()?;
        let bound = self.shutdown_bound;
        // The GIL is released: a call still running may be waiting on the ask callback.
        py.detach(|| end_run(runtime, &dispatcher, bound));
        Ok(())
    }
}

impl NativeRun {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Dispatcher>> {
        // A panic while holding this lock leaves a valid Option behind.
        self.dispatcher
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn dispatcher(&self) -> PyResult<Dispatcher> {
        self.lock()
            .clone()
            .ok_or_else(|| PyRuntimeError::new_err("the run is closed"))
    }
}

impl Drop for NativeRun {
    /// Garbage collection ends the run as `close()` does.
    fn drop(&mut self) {
        let Some(dispatcher) = self.lock().take() else {
            return;
        };
        let Ok(runtime) = runtime() else {
            return;
        };
        let bound = self.shutdown_bound;
        Python::attach(|py| py.detach(|| end_run(runtime, &dispatcher, bound)));
    }
}

/// `Dispatcher::shutdown` within `bound`, then, for the last open run, every process group
/// still alive (TERM, a short grace, KILL), as `serve` ends.
fn end_run(runtime: &tokio::runtime::Runtime, dispatcher: &Dispatcher, bound: Duration) {
    let last = OPEN_RUNS.fetch_sub(1, Ordering::SeqCst) == 1;
    runtime.block_on(async {
        let summary = dispatcher.shutdown(bound).await;
        if !summary.timed_out.is_empty() {
            eprintln!(
                "agent-tools: {} did not stop within {:.1}s; killing what is left",
                summary.timed_out.join(", "),
                bound.as_secs_f64()
            );
        }
        if last {
            tools_process::shutdown_all(Duration::from_millis(500)).await;
        }
    });
}

/// A question port that asks a Python callable. The callable is the Python half's adapter: it
/// receives the card as a dict and returns `("answered", [labels], text | None)`,
/// `("skipped",)`, `("declined",)` or `("cancelled",)`.
struct PythonPort {
    callback: Arc<Py<PyAny>>,
}

impl QuestionPort for PythonPort {
    fn ask(&self, card: Card) -> BoxFuture<'_, Answer> {
        let callback = Arc::clone(&self.callback);
        Box::pin(async move {
            // The callable may block (input(), a UI round trip): it runs on a blocking thread,
            // which takes the GIL only for the call itself.
            let asked = tokio::task::spawn_blocking(move || {
                Python::attach(|py| ask_python(py, &callback, &card))
            })
            .await;
            match asked {
                Ok(answer) => answer,
                Err(error) => Answer::NoHuman(format!("the ask callback did not return: {error}")),
            }
        })
    }
}

fn ask_python(py: Python<'_>, callback: &Py<PyAny>, card: &Card) -> Answer {
    let answer = card_dict(py, card)
        .and_then(|card| callback.call1(py, (card,)))
        .and_then(|answer| answer.extract::<(String, Option<Vec<String>>, Option<String>)>(py));
    match answer {
        Ok((kind, selected, text)) => match kind.as_str() {
            "answered" => Answer::Answered {
                selected: selected.unwrap_or_default(),
                text,
            },
            "skipped" => Answer::Skipped,
            "declined" => Answer::Declined,
            _ => Answer::Cancelled,
        },
        Err(error) => {
            // The person's code failed: the model is told nobody could answer, and the
            // traceback goes where Python's go.
            let message = error.to_string();
            error.print(py);
            Answer::NoHuman(format!("the ask callback raised {message}"))
        }
    }
}

fn card_dict<'py>(py: Python<'py>, card: &Card) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("number", card.number)?;
    let kind = match card.kind {
        CardKind::Question => "question",
        CardKind::Permission => "permission",
    };
    dict.set_item("kind", kind)?;
    dict.set_item("question", &card.question)?;
    dict.set_item("context", &card.context)?;
    let options = PyList::empty(py);
    for option in &card.options {
        options.append((&option.label, &option.description))?;
    }
    dict.set_item("options", options)?;
    dict.set_item("allow_free_text", card.allow_free_text)?;
    dict.set_item("multi_select", card.multi_select)?;
    dict.set_item("expires_in", card.expires_in.as_secs_f64())?;
    Ok(dict)
}

/// Tools as an MCP server's `tools/list` lists them (a JSON array), in the shape `format`
/// takes, as a JSON array: what `agent_tools.connect` hands out, made as a local run's are.
#[pyfunction]
#[pyo3(signature = (tools, format, strict=false))]
fn tool_definitions(tools: &str, format: &str, strict: bool) -> PyResult<String> {
    let tools: Vec<serde_json::Value> = serde_json::from_str(tools).map_err(|error| {
        PyValueError::new_err(format!(
            "the tools are not a JSON array of MCP tools: {error}"
        ))
    })?;
    let definitions = definitions::definitions(&tools, format, strict)?;
    serde_json::to_string(&definitions).map_err(|error| PyRuntimeError::new_err(error.to_string()))
}

/// The `agent-tools` command line, run with `sys.argv`; returns its exit status.
#[pyfunction]
fn main(py: Python<'_>) -> PyResult<u8> {
    let argv: Vec<String> = py.import("sys")?.getattr("argv")?.extract()?;
    // As in the Rust binary, a Ctrl-C before the command line installs its handlers ends the
    // process; Python's handler would only set a flag nobody reads while the GIL is released.
    let signal = py.import("signal")?;
    signal.call_method1(
        "signal",
        (signal.getattr("SIGINT")?, signal.getattr("SIG_DFL")?),
    )?;
    let status = py.detach(|| agent_tools::cli::status(argv));
    // The command line handles SIGINT itself (it ends the run); Python's handler saw the same
    // signal and would raise KeyboardInterrupt over a clean exit, so its flag is cleared here.
    let _ = py.check_signals();
    Ok(status)
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<NativeRun>()?;
    module.add_class::<Cancel>()?;
    module.add_function(wrap_pyfunction!(main, module)?)?;
    module.add_function(wrap_pyfunction!(tool_definitions, module)?)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
