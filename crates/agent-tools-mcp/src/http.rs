//! MCP over Streamable HTTP (PROD-2): `serve --http`. One endpoint, `/mcp`, takes both
//! protocol revisions (2025-11-25 sessions with `Mcp-Session-Id` and SSE, 2026-07-28
//! self-contained requests), served by rmcp's streamable-HTTP service on hyper's HTTP/1.1
//! server. In front of rmcp is what it leaves to the server:
//!
//! - the guard ([`guard`]): `Host` and `Origin` against the bind address and `--allow-host`
//!   (403), then the bearer token (401 with `WWW-Authenticate: Bearer`);
//! - a body limit (413), and a body read whole, so one that is not a JSON-RPC message gets
//!   that message's JSON-RPC error here;
//! - the 2025-11-25 task dialect, rewritten in requests and answers ([`rewrite`]);
//! - `GET /healthz`, without a token, for readiness probes.
//!
//! One process is one run: every session and every stateless request is served by a clone
//! of one [`McpServer::shared`], so clients share the run's lanes, staged edits, debug
//! session and kernels, and each call's cards go back to the client that made it.
//!
//! A client that stops reading stalls only what is sent to it: progress is sent from a task
//! of its own per call, and a call's result is handed to the transport after the call has
//! left its lane.

mod guard;
mod rewrite;
mod sessions;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::guard::{Guard, Refusal};
pub use self::guard::{Token, TokenError};
use self::rewrite::Body;
use self::sessions::Sessions;
use crate::McpServer;

/// The largest request body taken unless the server is told otherwise: a `write` of a large
/// file fits, a runaway client does not.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// How long a connection may take to send a request's headers: one that connects and says
/// nothing does not hold a connection slot.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The most connections served at once; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 512;

/// Where the MCP endpoint is.
const ENDPOINT: &str = "/mcp";

/// How `serve --http` listens.
#[derive(Debug)]
pub struct HttpOptions {
    /// The address to bind (port 0: one the system picks).
    pub addr: SocketAddr,
    /// The bearer token requests must carry; required off loopback.
    pub token: Option<Token>,
    /// Host names beyond the bind address (and loopback's) that requests may name; `*`: any.
    pub allow_hosts: Vec<String>,
    /// The largest request body taken (413 past it).
    pub max_body_bytes: usize,
}

/// Why `serve --http` did not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// Off loopback without a token.
    #[error(
        "{addr} is not a loopback address, so the server needs a bearer token: put a random \
         secret (e.g. `openssl rand -hex 32`) in a file and pass `--token-file FILE`, or set \
         AGENT_TOOLS_TOKEN; or bind 127.0.0.1"
    )]
    NoToken { addr: SocketAddr },
    /// `--allow-host '*'` without a token.
    #[error(
        "`--allow-host '*'` admits any Host, so a web page that rebinds its own name to this \
         address could reach the server; it needs a bearer token then (`--token-file FILE` or \
         AGENT_TOOLS_TOKEN), or name the hosts with `--allow-host NAME`"
    )]
    AnyHostNoToken,
    /// The address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A running `serve --http`.
pub struct HttpServer {
    local: SocketAddr,
    stop: CancellationToken,
    connections: TaskTracker,
}

/// What every connection's requests are served with.
struct State {
    service: StreamableHttpService<McpServer, LocalSessionManager>,
    guard: Guard,
    max_body_bytes: usize,
    sessions: Sessions,
}

impl HttpServer {
    /// Binds `options.addr` and serves `server` (made with [`McpServer::shared`]) on it
    /// until [`HttpServer::stop`].
    pub async fn start(server: McpServer, options: HttpOptions) -> Result<HttpServer, HttpError> {
        let addr = options.addr;
        if !addr.ip().is_loopback() && options.token.is_none() {
            return Err(HttpError::NoToken { addr });
        }
        // On loopback the Host check is what keeps a page that rebinds its name to 127.0.0.1
        // out; admitting any host leaves only the token to do it.
        if options.allow_hosts.iter().any(|host| host == "*") && options.token.is_none() {
            return Err(HttpError::AnyHostNoToken);
        }
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| HttpError::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| HttpError::Bind { addr, source })?;
        let stop = CancellationToken::new();
        // The guard checks `Host` itself (with `--allow-host`), before the token.
        let config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .with_json_response(true)
            .with_max_request_body_bytes(options.max_body_bytes)
            .with_cancellation_token(stop.child_token());
        // Idle sessions are ended by `sessions`, which counts a stream a client waits on as
        // activity; rmcp's own timer would end a long call that is silent for 5 minutes.
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = None;
        let manager = Arc::new(manager);
        let sessions = Sessions::default();
        tokio::spawn(sessions.clone().sweep(Arc::clone(&manager), stop.clone()));
        let service = StreamableHttpService::new(move || Ok(server.clone()), manager, config);
        let state = Arc::new(State {
            service,
            guard: Guard::new(local, &options.allow_hosts, options.token),
            max_body_bytes: options.max_body_bytes,
            sessions,
        });
        let connections = TaskTracker::new();
        tokio::spawn(accept(listener, state, stop.clone(), connections.clone()));
        Ok(HttpServer {
            local,
            stop,
            connections,
        })
    }

    /// The address it listens on (with the port the system picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The MCP endpoint's URL, as printed when the server is ready: one a client on this
    /// machine can use, so a server bound to every address names loopback (its guard does not
    /// answer to `0.0.0.0`, which browsers take for this machine).
    pub fn url(&self) -> String {
        let mut reachable = self.local;
        match reachable.ip() {
            std::net::IpAddr::V4(ip) if ip.is_unspecified() => {
                reachable.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
            }
            std::net::IpAddr::V6(ip) if ip.is_unspecified() => {
                reachable.set_ip(std::net::Ipv6Addr::LOCALHOST.into());
            }
            _ => {}
        }
        format!("http://{reachable}{ENDPOINT}")
    }

    /// Stops accepting, ends every session and stream, and waits up to `grace` for the
    /// connections to finish what they are sending (answers to calls the run's end cancelled).
    pub async fn stop(self, grace: Duration) {
        self.stop.cancel();
        self.connections.close();
        if tokio::time::timeout(grace, self.connections.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                grace_ms = grace.as_millis() as u64,
                "HTTP connections still open after the grace; they end with the process"
            );
        }
    }
}

/// Accepts connections until `stop`, each served on a task of its own.
async fn accept(
    listener: TcpListener,
    state: Arc<State>,
    stop: CancellationToken,
    connections: TaskTracker,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot,
            () = stop.cancelled() => return,
        };
        let Ok(slot) = slot else { return };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of descriptors, most likely: wait for some to be freed.
                tracing::warn!(%error, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        let stop = stop.clone();
        connections.spawn(async move {
            let _slot = slot;
            let service = hyper::service::service_fn(move |request| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(state.handle(request).await) }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let served = tokio::select! {
                served = connection.as_mut() => served,
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = served {
                tracing::debug!(%error, "an HTTP connection ended with an error");
            }
        });
    }
}

impl State {
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        match request.uri().path() {
            ENDPOINT => {}
            "/healthz" => return health(request.method()),
            other => {
                return text(
                    StatusCode::NOT_FOUND,
                    format!(
                        "nothing is served at `{other}`: MCP is at {ENDPOINT} (POST, and GET for \
                         a session's stream), health at /healthz"
                    ),
                );
            }
        }
        if let Err(refusal) = self.guard.check(request.headers()) {
            return refused(refusal);
        }
        if request.method() == Method::DELETE {
            // A session ended: rmcp says 202, which the Python SDK's client logs as a failed
            // termination (it takes 200 and 204); every client takes 204.
            let mut response = self.forward(request).await;
            if response.status() == StatusCode::ACCEPTED {
                *response.status_mut() = StatusCode::NO_CONTENT;
                *response.body_mut() = Body::default();
            }
            return response;
        }
        if request.method() != Method::POST {
            return self.forward(request).await;
        }
        let (mut parts, body) = request.into_parts();
        let body = match Limited::new(body, self.max_body_bytes).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => {
                return text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "the request body is over this server's limit of {} bytes; send less \
                         per call (a large file in parts), or start the server with a larger \
                         `--max-body-bytes`",
                        self.max_body_bytes
                    ),
                );
            }
            Err(error) => {
                return text(
                    StatusCode::BAD_REQUEST,
                    format!("the request body could not be read: {error}"),
                );
            }
        };
        let (body, dialect) = match rewrite::inbound(&parts.headers, body) {
            Ok(inbound) => inbound,
            Err(answer) => return answer,
        };
        parts.headers.remove(header::CONTENT_LENGTH);
        let response = self
            .forward(Request::from_parts(parts, Full::new(body)))
            .await;
        match dialect {
            Some(dialect) => rewrite::outbound(response, dialect).await,
            None => response,
        }
    }

    /// Hands `request` to rmcp's service; a session's answer counts as its activity while
    /// its stream is open.
    async fn forward<B>(&self, request: Request<B>) -> Response<Body>
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: std::fmt::Display,
    {
        let asked = session_of(request.headers());
        let deleting = request.method() == Method::DELETE;
        let early = asked.as_deref().map(|id| self.sessions.open(id));
        let mut service = self.service.clone();
        let Ok(response) = tower_service::Service::call(&mut service, request).await;
        if deleting {
            // Only a session rmcp did end leaves the watch; a refused DELETE (a wrong version
            // header) leaves it to the idle sweep.
            if let Some(id) = &asked
                && response.status().is_success()
            {
                self.sessions.ended(id);
            }
            return response;
        }
        // An `initialize` answer names the session it opened.
        let Some(open) =
            early.or_else(|| session_of(response.headers()).map(|id| self.sessions.open(&id)))
        else {
            return response;
        };
        let (parts, body) = response.into_parts();
        let stream = body.into_data_stream().map(move |chunk| {
            let _open = &open;
            chunk.map(hyper::body::Frame::data)
        });
        Response::from_parts(
            parts,
            BodyExt::boxed(http_body_util::StreamBody::new(stream)),
        )
    }
}

/// The `Mcp-Session-Id` a request or an answer carries.
fn session_of(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// `GET /healthz`: the server is up, and which version it is.
fn health(method: &Method) -> Response<Body> {
    if method != Method::GET && method != Method::HEAD {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "/healthz answers GET".to_owned(),
        );
    }
    let body = serde_json::json!({
        "status": "ok",
        "name": "agent-tools",
        "version": env!("CARGO_PKG_VERSION"),
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .unwrap_or_default()
}

fn refused(refusal: Refusal) -> Response<Body> {
    let mut response = text(refusal.status, refusal.message);
    if let Some(challenge) = refusal.challenge {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

fn text(status: StatusCode, message: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(message + "\n")).boxed())
        .unwrap_or_default()
}
