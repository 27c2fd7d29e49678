//! Who may reach `/mcp`: a `Host` and `Origin` this server answers to (so neither DNS
//! rebinding nor a page in a browser reaches a server on loopback), and the bearer token.

use std::net::SocketAddr;

use http::{HeaderMap, HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};

/// The shortest token taken: anything shorter is guessable.
const SHORTEST_TOKEN: usize = 16;

/// The server's bearer token. Only its SHA-256 is kept, and an offered token is compared
/// with it in constant time (both are hashed, then every byte of the two digests is
/// compared), so neither the token's length nor its prefix shows in the time an answer takes.
#[derive(Clone)]
pub struct Token {
    digest: [u8; 32],
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(redacted)")
    }
}

/// A token that cannot guard a server.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// Empty, or only whitespace.
    #[error(
        "the token is empty; put a random secret in it, e.g. the output of `openssl rand -hex 32`"
    )]
    Empty,
    /// Shorter than [`SHORTEST_TOKEN`] characters.
    #[error(
        "the token has {0} characters, fewer than the {SHORTEST_TOKEN} a token needs; use a random \
         secret such as the output of `openssl rand -hex 32`"
    )]
    Short(usize),
}

impl Token {
    /// The token `secret`, without the whitespace around it (a token file ends in a newline).
    pub fn new(secret: &str) -> Result<Token, TokenError> {
        let secret = secret.trim();
        match secret.chars().count() {
            0 => Err(TokenError::Empty),
            short if short < SHORTEST_TOKEN => Err(TokenError::Short(short)),
            _ => Ok(Token {
                digest: Sha256::digest(secret.as_bytes()).into(),
            }),
        }
    }

    fn admits(&self, offered: &str) -> bool {
        let offered: [u8; 32] = Sha256::digest(offered.as_bytes()).into();
        let difference = self
            .digest
            .iter()
            .zip(offered.iter())
            .fold(0u8, |difference, (a, b)| difference | (a ^ b));
        std::hint::black_box(difference) == 0
    }
}

/// Why a request was turned away: its status, headers and the sentence its body says.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) challenge: Option<HeaderValue>,
    pub(crate) message: String,
}

impl Refusal {
    fn forbidden(message: String) -> Refusal {
        Refusal {
            status: StatusCode::FORBIDDEN,
            challenge: None,
            message,
        }
    }
}

/// The checks in front of `/mcp`.
#[derive(Debug)]
pub(crate) struct Guard {
    /// Host names (lowercase, without brackets) this server answers to; `None`: any.
    hosts: Option<Vec<String>>,
    token: Option<Token>,
}

impl Guard {
    /// A guard for a server bound to `addr`: its own address, the loopback names when it is
    /// bound to loopback or to every address, and `allowed` (`*` admits any host).
    pub(crate) fn new(addr: SocketAddr, allowed: &[String], token: Option<Token>) -> Guard {
        if allowed.iter().any(|host| host == "*") {
            return Guard { hosts: None, token };
        }
        let ip = addr.ip();
        let mut hosts = Vec::new();
        if !ip.is_unspecified() {
            hosts.push(ip.to_string());
        }
        if ip.is_loopback() || ip.is_unspecified() {
            hosts.extend(["localhost", "127.0.0.1", "::1"].map(str::to_owned));
        }
        for host in allowed.iter().map(|host| bare_host(host)) {
            hosts.push(host);
        }
        let mut seen = std::collections::HashSet::new();
        hosts.retain(|host| seen.insert(host.clone()));
        Guard {
            hosts: Some(hosts),
            token,
        }
    }

    /// The names a request's `Host` may carry, for messages.
    fn named(&self) -> String {
        match &self.hosts {
            Some(hosts) => hosts
                .iter()
                .map(|host| format!("`{host}`"))
                .collect::<Vec<_>>()
                .join(", "),
            None => "any".to_owned(),
        }
    }

    fn admits_host(&self, host: &str) -> bool {
        self.hosts
            .as_ref()
            .is_none_or(|hosts| hosts.iter().any(|allowed| *allowed == host))
    }

    /// Checks `Host`, then `Origin`, then the token.
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = headers
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<http::uri::Authority>().ok());
        let Some(host) = host else {
            return Err(Refusal::forbidden(
                "the request has no readable `Host` header; send one naming this server".to_owned(),
            ));
        };
        let name = bare_host(host.host());
        if !self.admits_host(&name) {
            return Err(Refusal::forbidden(format!(
                "this server does not answer to the host `{name}` (it answers to {}); start it \
                 with `--allow-host {name}` if that name is meant to reach it",
                self.named()
            )));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            self.check_origin(origin, &host)?;
        }
        self.check_token(headers)
    }

    /// A browser's request is taken only from a page of this server's own origin: the same
    /// allowed host and the same port as the request's `Host`.
    fn check_origin(
        &self,
        origin: &HeaderValue,
        host: &http::uri::Authority,
    ) -> Result<(), Refusal> {
        let shown = String::from_utf8_lossy(origin.as_bytes()).into_owned();
        let refused = || {
            Refusal::forbidden(format!(
                "requests from the web origin `{shown}` are refused: only a page served by this \
                 server itself may call it; an MCP client outside a browser sends no `Origin`"
            ))
        };
        let uri = origin
            .to_str()
            .ok()
            .and_then(|origin| origin.parse::<http::Uri>().ok())
            .ok_or_else(refused)?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(refused());
        };
        let default_port = |scheme: &str| match scheme {
            "https" => Some(443),
            "http" => Some(80),
            _ => None,
        };
        let origin_port = authority.port_u16().or_else(|| default_port(scheme));
        let host_port = host.port_u16().or(Some(80));
        match self.admits_host(&bare_host(authority.host())) && origin_port == host_port {
            true => Ok(()),
            false => Err(refused()),
        }
    }

    fn check_token(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(token) = &self.token else {
            return Ok(());
        };
        let offered = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| {
                let (scheme, credentials) = value.trim().split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then(|| credentials.trim())
            });
        match offered {
            Some(offered) if token.admits(offered) => Ok(()),
            Some(_) => Err(Refusal {
                status: StatusCode::UNAUTHORIZED,
                challenge: Some(HeaderValue::from_static(
                    "Bearer realm=\"agent-tools\", error=\"invalid_token\"",
                )),
                message: "the bearer token is not this server's; send the token the server \
                          was started with (its --token-file or AGENT_TOOLS_TOKEN)"
                    .to_owned(),
            }),
            None => Err(Refusal {
                status: StatusCode::UNAUTHORIZED,
                challenge: Some(HeaderValue::from_static("Bearer realm=\"agent-tools\"")),
                message: "this server needs a bearer token: send `Authorization: Bearer TOKEN` \
                          with the token the server was started with (its --token-file or \
                          AGENT_TOOLS_TOKEN)"
                    .to_owned(),
            }),
        }
    }
}

/// A host name as compared: lowercase, an IPv6 literal without its brackets.
fn bare_host(host: &str) -> String {
    host.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "a-token-of-thirty-two-characters";

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    fn loopback() -> Guard {
        Guard::new(
            "127.0.0.1:8765".parse().unwrap(),
            &[],
            Some(Token::new(SECRET).unwrap()),
        )
    }

    #[test]
    fn a_token_is_trimmed_and_must_be_long_enough() {
        assert!(Token::new(&format!("{SECRET}\n")).unwrap().admits(SECRET));
        assert!(matches!(Token::new(" \n"), Err(TokenError::Empty)));
        assert!(matches!(Token::new("short"), Err(TokenError::Short(5))));
        assert_eq!(
            format!("{:?}", Token::new(SECRET).unwrap()),
            "Token(redacted)"
        );
    }

    #[test]
    fn the_token_is_checked_after_the_host() {
        let guard = loopback();
        let good = format!("Bearer {SECRET}");
        assert!(
            guard
                .check(&headers(&[
                    ("host", "127.0.0.1:8765"),
                    ("authorization", &good)
                ]))
                .is_ok()
        );
        let missing = guard
            .check(&headers(&[("host", "localhost:8765")]))
            .unwrap_err();
        assert_eq!(missing.status, StatusCode::UNAUTHORIZED);
        let wrong = guard
            .check(&headers(&[
                ("host", "localhost:8765"),
                ("authorization", "Bearer not-the-token-at-all-no"),
            ]))
            .unwrap_err();
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
        assert!(
            wrong
                .challenge
                .unwrap()
                .to_str()
                .unwrap()
                .contains("invalid_token")
        );
        let foreign = guard
            .check(&headers(&[
                ("host", "evil.example"),
                ("authorization", &good),
            ]))
            .unwrap_err();
        assert_eq!(foreign.status, StatusCode::FORBIDDEN);
        assert!(
            foreign.message.contains("--allow-host evil.example"),
            "{}",
            foreign.message
        );
    }

    #[test]
    fn only_the_servers_own_origin_is_taken() {
        let guard = Guard::new("127.0.0.1:8765".parse().unwrap(), &[], None);
        let from =
            |origin: &str| guard.check(&headers(&[("host", "localhost:8765"), ("origin", origin)]));
        assert!(from("http://localhost:8765").is_ok());
        assert!(from("http://127.0.0.1:8765").is_ok());
        for foreign in [
            "http://evil.example",
            "http://localhost:3000",
            "null",
            "https://localhost",
        ] {
            assert_eq!(
                from(foreign).unwrap_err().status,
                StatusCode::FORBIDDEN,
                "{foreign}"
            );
        }
    }

    #[test]
    fn a_server_on_every_address_answers_to_loopback_and_the_allowed_names() {
        let guard = Guard::new(
            "0.0.0.0:8765".parse().unwrap(),
            &["Agent-Tools.default.svc".to_owned(), "[fd00::1]".to_owned()],
            None,
        );
        for host in [
            "localhost:8765",
            "agent-tools.default.svc:8765",
            "[fd00::1]:80",
        ] {
            assert!(guard.check(&headers(&[("host", host)])).is_ok(), "{host}");
        }
        assert!(guard.check(&headers(&[("host", "0.0.0.0:8765")])).is_err());
        let any = Guard::new("0.0.0.0:8765".parse().unwrap(), &["*".to_owned()], None);
        assert!(any.check(&headers(&[("host", "anything.example")])).is_ok());
    }
}
