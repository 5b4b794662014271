//! The conversations on an upgraded connection: exec and attach over the channel protocols,
//! port-forward over `v4.channel.k8s.io` (two channels per port) or over SPDY tunnelled in
//! WebSocket messages.

use super::channels::{Outcome, Protocol, Version, CLOSE, ERROR, STDERR, STDIN, STDOUT};
use super::ports::{Connection, Listener};
use super::process::Program;
use super::spdy;
use futures::{SinkExt, StreamExt};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

#[derive(Debug, Clone, Copy, Default)]
pub struct Streams {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
}

impl Streams {
    /// The kubelet's "connection established" signal: an empty message on the lowest
    /// writable channel.
    fn first_channel(&self) -> u8 {
        if self.stdout {
            STDOUT
        } else if self.stderr {
            STDERR
        } else {
            ERROR
        }
    }
}

/// The runtime's text for a non-zero exit: through the apiserver's v5 translator it is
/// client-go's, straight from the kubelet (v4 and older) it is containerd's.
pub fn exit_detail(version: Version, argv: &[String], code: i32) -> String {
    match version {
        Version::V5 => format!("command terminated with exit code {}", code),
        _ => format!(
            "error executing command [{}], exit code {}",
            argv.join(" "),
            code
        ),
    }
}

/// Runs `program` (or reports why it cannot run) on an exec connection.
pub async fn exec<S>(
    mut ws: WebSocketStream<S>,
    proto: Protocol,
    streams: Streams,
    program: Result<Program, Outcome>,
    argv: Vec<String>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if ws
        .send(proto.encode(streams.first_channel(), &[]))
        .await
        .is_err()
    {
        return;
    }
    let outcome = match program {
        Err(o) => o,
        Ok(p) => {
            if p.echo_stdin
                && streams.stdin
                && !echo_until_stdin_closes(&mut ws, proto, streams).await
            {
                return;
            }
            tokio::time::sleep(p.delay).await;
            let mut msgs = Vec::new();
            if streams.stdout && !p.stdout.is_empty() {
                msgs.push(proto.encode(STDOUT, &p.stdout));
            }
            // With a TTY there is no separate stderr: the terminal merges it into stdout.
            match (streams.stderr, streams.tty && streams.stdout) {
                (true, _) if !p.stderr.is_empty() => msgs.push(proto.encode(STDERR, &p.stderr)),
                (false, true) if !p.stderr.is_empty() => msgs.push(proto.encode(STDOUT, &p.stderr)),
                _ => {}
            }
            for m in msgs {
                if ws.send(m).await.is_err() {
                    return;
                }
            }
            match p.exit_code {
                0 => Outcome::Success,
                code => Outcome::ExitCode {
                    code,
                    detail: exit_detail(proto.version, &argv, code),
                },
            }
        }
    };
    finish(ws, proto, &outcome).await;
}

/// Copies stdin to stdout until stdin closes (v5 close signal); false when the client left.
async fn echo_until_stdin_closes<S>(
    ws: &mut WebSocketStream<S>,
    proto: Protocol,
    streams: Streams,
) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    while let Some(Ok(msg)) = ws.next().await {
        if msg.is_close() {
            return false;
        }
        match proto.decode(&msg) {
            Some((STDIN, data)) if streams.stdout && !data.is_empty() => {
                let Ok(()) = ws.send(proto.encode(STDOUT, &data)).await else {
                    return false;
                };
            }
            Some((CLOSE, data)) if proto.version == Version::V5 && data.first() == Some(&STDIN) => {
                return true
            }
            _ => {}
        }
    }
    false
}

/// What an attached client sees of the container's main process.
pub enum Output {
    Bytes(Vec<u8>),
    /// The container instance the client attached to is gone.
    Ended,
}

/// Follows the container's output (`poll` is asked every `period`) until it ends or the
/// client leaves. Stdin is accepted and dropped: a simulated main process reads nothing.
pub async fn attach<S, F>(
    mut ws: WebSocketStream<S>,
    proto: Protocol,
    streams: Streams,
    period: Duration,
    mut poll: F,
) where
    S: AsyncRead + AsyncWrite + Unpin,
    F: FnMut() -> Output,
{
    if ws
        .send(proto.encode(streams.first_channel(), &[]))
        .await
        .is_err()
    {
        return;
    }
    let mut tick = tokio::time::interval(period);
    loop {
        tokio::select! {
            msg = ws.next() => match msg {
                Some(Ok(m)) if !m.is_close() => continue,
                _ => return,
            },
            _ = tick.tick() => match poll() {
                Output::Bytes(b) if b.is_empty() || !streams.stdout => {}
                Output::Bytes(b) => {
                    if ws.send(proto.encode(STDOUT, &b)).await.is_err() {
                        return;
                    }
                }
                Output::Ended => break,
            }
        }
    }
    finish(ws, proto, &Outcome::Success).await;
}

/// Writes the status on the error channel and closes the connection, which is what tells
/// clients that stdout and stderr are complete.
async fn finish<S>(mut ws: WebSocketStream<S>, proto: Protocol, outcome: &Outcome)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if let Some(payload) = proto.status_payload(outcome) {
        if ws.send(proto.encode(ERROR, &payload)).await.is_err() {
            return;
        }
    }
    close(ws).await;
}

fn normal_close() -> CloseFrame {
    CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    }
}

async fn close<S>(mut ws: WebSocketStream<S>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // Clients read a normal closure (1000) as the end of their streams, anything else as an error.
    let _ = ws.close(Some(normal_close())).await;
    // Wait briefly for the client's close frame so the TLS stream ends cleanly.
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
}

/// `v4.channel.k8s.io` port-forward: channel 2i carries port i's data, 2i+1 its error text;
/// each starts with the port number (little-endian u16). The connection closes when every
/// port's connection has ended.
pub async fn portforward_channels<S>(
    mut ws: WebSocketStream<S>,
    proto: Protocol,
    ports: Vec<u16>,
    listeners: BTreeMap<u16, Listener>,
    refused: impl Fn(u16) -> String,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut conns: Vec<Option<Connection>> = Vec::new();
    let mut first = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let (data, err) = ((2 * i) as u8, (2 * i + 1) as u8);
        first.push(proto.encode(data, &port.to_le_bytes()));
        first.push(proto.encode(err, &port.to_le_bytes()));
        match listeners.get(port) {
            Some(l) => conns.push(Some(Connection::new(l.clone()))),
            None => {
                first.push(proto.encode(err, refused(*port).as_bytes()));
                conns.push(None);
            }
        }
    }
    for m in first {
        if ws.send(m).await.is_err() {
            return;
        }
    }
    while conns.iter().any(Option::is_some) {
        let Some(Ok(msg)) = ws.next().await else {
            return;
        };
        if msg.is_close() {
            return;
        }
        let Some((channel, data)) = proto.decode(&msg) else {
            continue;
        };
        let i = channel as usize / 2;
        let Some(Some(conn)) = conns.get_mut(i).filter(|_| channel % 2 == 0) else {
            continue;
        };
        let reply = conn.receive(&data);
        if !reply.is_empty() && ws.send(proto.encode(channel, &reply)).await.is_err() {
            return;
        }
        if conn.is_closed() {
            conns[i] = None;
        }
    }
    close(ws).await;
}

/// SPDY port-forward whose bytes travel as binary WebSocket messages (client-go's
/// `TunnelingConnection`: one message per write, no channel prefix).
pub async fn portforward_tunnel<S>(
    ws: WebSocketStream<S>,
    listeners: BTreeMap<u16, Listener>,
    refused: impl Fn(u16) -> String + Send + 'static,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (near, far) = tokio::io::duplex(1 << 16);
    let server = tokio::spawn(spdy::serve_portforward(
        far,
        move |p| listeners.get(&p).cloned(),
        refused,
    ));
    let (mut sink, mut stream) = ws.split();
    let (mut rd, mut wr) = tokio::io::split(near);
    let up = async {
        while let Some(Ok(msg)) = stream.next().await {
            match msg {
                Message::Binary(b) => {
                    let Ok(()) = wr.write_all(&b).await else {
                        break;
                    };
                }
                Message::Close(_) => break,
                _ => {}
            }
        }
        let _ = wr.shutdown().await;
    };
    let down = async {
        let mut buf = vec![0u8; 32 * 1024];
        while let Ok(n) = rd.read(&mut buf).await {
            if n == 0 || sink.send(Message::binary(buf[..n].to_vec())).await.is_err() {
                break;
            }
        }
        let _ = sink.send(Message::Close(Some(normal_close()))).await;
        let _ = sink.close().await;
    };
    tokio::join!(up, down);
    server.abort();
}
