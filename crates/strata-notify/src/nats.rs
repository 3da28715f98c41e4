//! A small NATS client: the text protocol over TCP (`INFO`, `CONNECT`, `PUB`, `PING`/`PONG`),
//! enough to publish. Each publish is followed by a `PING` and counts as delivered only when the
//! server's `PONG` comes back (NATS answers in order, so an `-ERR` about the publish comes first).

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Credentials for the NATS server, as MinIO names them (`USERNAME`, `PASSWORD`, `TOKEN`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NatsAuth {
    pub username: Option<String>,
    pub password: Option<String>,
    pub token: Option<String>,
}

pub struct NatsConnection {
    stream: BufReader<TcpStream>,
}

impl NatsConnection {
    /// Connects, reads the server's `INFO`, sends `CONNECT` and waits for the `PONG` that
    /// confirms the server accepted it.
    pub async fn connect(address: &str, auth: &NatsAuth) -> Result<Self, String> {
        let tcp = TcpStream::connect(address).await.map_err(|e| format!("connect to {address}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let mut conn = Self { stream: BufReader::new(tcp) };
        let info = conn.read_line().await?;
        if !info.starts_with("INFO") {
            return Err(format!("{address} is not a NATS server (it said {info:?})"));
        }
        let mut options = serde_json::json!({
            "verbose": false, "pedantic": false, "name": "strata", "lang": "rust",
            "version": env!("CARGO_PKG_VERSION"), "protocol": 1,
        });
        if let Some(u) = &auth.username {
            options["user"] = u.as_str().into();
        }
        if let Some(p) = &auth.password {
            options["pass"] = p.as_str().into();
        }
        if let Some(t) = &auth.token {
            options["auth_token"] = t.as_str().into();
        }
        conn.write(format!("CONNECT {options}\r\nPING\r\n").as_bytes()).await?;
        conn.await_pong().await?;
        Ok(conn)
    }

    /// Publishes `payload` on `subject` and waits until the server confirmed it.
    pub async fn publish(&mut self, subject: &str, payload: &[u8]) -> Result<(), String> {
        let mut frame = format!("PUB {subject} {}\r\n", payload.len()).into_bytes();
        frame.extend_from_slice(payload);
        frame.extend_from_slice(b"\r\nPING\r\n");
        self.write(&frame).await?;
        self.await_pong().await
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        let stream = self.stream.get_mut();
        stream.write_all(bytes).await.map_err(|e| format!("write: {e}"))?;
        stream.flush().await.map_err(|e| format!("write: {e}"))
    }

    async fn read_line(&mut self) -> Result<String, String> {
        let mut line = Vec::new();
        let mut limited = (&mut self.stream).take(NATS_LINE_SIZE_MAX);
        let n = limited.read_until(b'\n', &mut line).await.map_err(|e| format!("read: {e}"))?;
        if n == 0 || line.last() != Some(&b'\n') {
            return Err("the NATS server closed the connection".into());
        }
        Ok(String::from_utf8_lossy(&line).trim_end().to_owned())
    }

    /// Reads until `PONG`, answering the server's own `PING`s; `-ERR` fails.
    async fn await_pong(&mut self) -> Result<(), String> {
        loop {
            let line = self.read_line().await?;
            match line.as_str() {
                "PONG" => return Ok(()),
                "PING" => self.write(b"PONG\r\n").await?,
                l if l.starts_with("-ERR") => return Err(format!("NATS server: {l}")),
                _ => {} // +OK, INFO updates
            }
        }
    }
}

use strata_types::limits::NATS_LINE_SIZE_MAX;
use tokio::io::AsyncReadExt as _;
