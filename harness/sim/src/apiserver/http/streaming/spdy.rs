//! Port-forward over SPDY/3.1, the protocol kubectl speaks to the kubelet: tunnelled in a
//! WebSocket (`SPDY/3.1+portforward.k8s.io`, kubectl's first choice) or after a plain
//! `Upgrade: SPDY/3.1` (its fallback). Only what a port-forward server needs: streams the
//! client opens (SYN_STREAM answered by SYN_REPLY), DATA with FIN, RST_STREAM, PING echoed,
//! GOAWAY. Flow control frames are ignored, as the Go implementation clients use does.
//!
//! Per forwarded connection the client opens two streams with the same `requestID` header:
//! `streamType: error` and `streamType: data`, both naming the `port`. The server writes a
//! failure as text on the error stream and closes both when the connection ends.

use super::ports::{Connection, Listener};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress};
use std::collections::{BTreeMap, HashMap};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const VERSION: u16 = 3;
const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
const FLAG_FIN: u8 = 1;
/// Larger frames are refused (kubectl writes at most 32 KiB per frame).
const MAX_FRAME: usize = 1 << 24;

/// The SPDY/3 header compression dictionary (draft 3, section 2.6.10.1): 65 length-prefixed
/// header names and values, then a run of common status lines, dates and media types.
const DICTIONARY_WORDS: [&str; 65] = [
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
];
const DICTIONARY_TAIL: &str = concat!(
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505",
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized",
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable",
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT",
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,",
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
);

fn dictionary() -> Vec<u8> {
    let mut d = Vec::with_capacity(1423);
    for w in DICTIONARY_WORDS {
        d.extend_from_slice(&(w.len() as u32).to_be_bytes());
        d.extend_from_slice(w.as_bytes());
    }
    d.extend_from_slice(DICTIONARY_TAIL.as_bytes());
    d
}

/// The per-connection header (de)compression contexts: one zlib stream each way for the
/// whole connection, primed with the dictionary.
struct HeaderCodec {
    dict: Vec<u8>,
    inflate: Decompress,
    deflate: Compress,
}

impl HeaderCodec {
    fn new() -> Self {
        let dict = dictionary();
        let mut deflate = Compress::new(Compression::best(), true);
        let _ = deflate.set_dictionary(&dict);
        HeaderCodec {
            dict,
            inflate: Decompress::new(true),
            deflate,
        }
    }

    fn decode(&mut self, block: &[u8]) -> Result<Vec<(String, String)>, String> {
        let mut out = Vec::with_capacity(block.len() * 4 + 64);
        let mut pos = 0;
        while pos < block.len() {
            if out.len() == out.capacity() {
                out.reserve(out.capacity());
            }
            let before = self.inflate.total_in();
            match self
                .inflate
                .decompress_vec(&block[pos..], &mut out, FlushDecompress::Sync)
            {
                Ok(_) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.inflate
                        .set_dictionary(&self.dict)
                        .map_err(|e| format!("header dictionary: {}", e))?;
                }
                Err(e) => return Err(format!("header block: {}", e)),
            }
            pos += (self.inflate.total_in() - before) as usize;
        }
        parse_header_block(&out)
    }

    fn encode(&mut self, headers: &[(&str, &str)]) -> Vec<u8> {
        let mut plain = (headers.len() as u32).to_be_bytes().to_vec();
        for (k, v) in headers {
            for s in [k, v] {
                plain.extend_from_slice(&(s.len() as u32).to_be_bytes());
                plain.extend_from_slice(s.as_bytes());
            }
        }
        let mut out = Vec::with_capacity(plain.len() + 64);
        let mut pos = 0;
        loop {
            let before = self.deflate.total_in();
            let _ = self
                .deflate
                .compress_vec(&plain[pos..], &mut out, FlushCompress::Sync);
            pos += (self.deflate.total_in() - before) as usize;
            if pos >= plain.len() && out.len() < out.capacity() {
                return out;
            }
            out.reserve(out.capacity().max(64));
        }
    }
}

fn parse_header_block(b: &[u8]) -> Result<Vec<(String, String)>, String> {
    let mut pos = 0;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let s = b.get(pos..pos + n).ok_or("truncated header block")?;
        pos += n;
        Ok(s)
    };
    let count = u32::from_be_bytes(take(4)?.try_into().unwrap_or_default());
    let mut out = Vec::new();
    for _ in 0..count {
        let mut pair = [String::new(), String::new()];
        for p in &mut pair {
            let len = u32::from_be_bytes(take(4)?.try_into().unwrap_or_default()) as usize;
            *p = String::from_utf8_lossy(take(len)?).into_owned();
        }
        let [k, v] = pair;
        out.push((k.to_ascii_lowercase(), v));
    }
    Ok(out)
}

fn control_frame(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(8 + payload.len());
    f.extend_from_slice(&(0x8000 | VERSION).to_be_bytes());
    f.extend_from_slice(&kind.to_be_bytes());
    f.push(flags);
    f.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    f.extend_from_slice(payload);
    f
}

fn data_frame(stream: u32, flags: u8, data: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(8 + data.len());
    f.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    f.push(flags);
    f.extend_from_slice(&(data.len() as u32).to_be_bytes()[1..]);
    f.extend_from_slice(data);
    f
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Data,
    Error,
}

/// One forwarded connection: its two streams and the listener behind the port.
#[derive(Default)]
struct Pair {
    port: u16,
    data: Option<u32>,
    error: Option<u32>,
    conn: Option<Connection>,
    done: bool,
}

/// Serves port-forward streams on `io` until the client goes away. `listener` says what
/// answers on a port; `refused` is the kubelet's message for a closed one.
pub async fn serve_portforward<S>(
    io: S,
    listener: impl Fn(u16) -> Option<Listener>,
    refused: impl Fn(u16) -> String,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut rd, mut wr) = tokio::io::split(io);
    let mut codec = HeaderCodec::new();
    let mut streams: HashMap<u32, (String, Kind)> = HashMap::new();
    let mut pairs: BTreeMap<String, Pair> = BTreeMap::new();
    let mut last_stream = 0u32;
    loop {
        let mut head = [0u8; 8];
        if rd.read_exact(&mut head).await.is_err() {
            return;
        }
        let len = u32::from_be_bytes([0, head[5], head[6], head[7]]) as usize;
        let flags = head[4];
        if len > MAX_FRAME {
            return;
        }
        let mut payload = vec![0u8; len];
        if rd.read_exact(&mut payload).await.is_err() {
            return;
        }
        let mut out: Vec<u8> = Vec::new();
        if head[0] & 0x80 != 0 {
            let kind = u16::from_be_bytes([head[2], head[3]]);
            match kind {
                SYN_STREAM if payload.len() >= 10 => {
                    let id = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                        & 0x7fff_ffff;
                    last_stream = last_stream.max(id);
                    let Ok(headers) = codec.decode(&payload[10..]) else {
                        out.extend(control_frame(
                            GOAWAY,
                            0,
                            &[&last_stream.to_be_bytes()[..], &1u32.to_be_bytes()[..]].concat(),
                        ));
                        let _ = wr.write_all(&out).await;
                        return;
                    };
                    let h = |name: &str| {
                        headers
                            .iter()
                            .find(|(k, _)| k == name)
                            .map(|(_, v)| v.clone())
                    };
                    let block = codec.encode(&[]);
                    out.extend(control_frame(
                        SYN_REPLY,
                        0,
                        &[&id.to_be_bytes()[..], &block[..]].concat(),
                    ));
                    let port = h("port").and_then(|p| p.parse::<u16>().ok());
                    let kind = match h("streamtype").as_deref() {
                        Some("data") => Kind::Data,
                        Some("error") => Kind::Error,
                        _ => {
                            // Unknown stream types are refused, as the kubelet does.
                            out.extend(control_frame(
                                RST_STREAM,
                                0,
                                &[&id.to_be_bytes()[..], &1u32.to_be_bytes()[..]].concat(),
                            ));
                            if wr.write_all(&out).await.is_err() {
                                return;
                            }
                            continue;
                        }
                    };
                    let request = h("requestid").unwrap_or_default();
                    streams.insert(id, (request.clone(), kind));
                    let pair = pairs.entry(request).or_default();
                    match kind {
                        Kind::Data => pair.data = Some(id),
                        Kind::Error => pair.error = Some(id),
                    }
                    if let Some(p) = port {
                        pair.port = p;
                    }
                    if let (Some(data), Some(error), None) =
                        (pair.data, pair.error, pair.conn.as_ref())
                    {
                        match listener(pair.port) {
                            Some(l) => pair.conn = Some(Connection::new(l)),
                            None => {
                                out.extend(data_frame(
                                    error,
                                    FLAG_FIN,
                                    refused(pair.port).as_bytes(),
                                ));
                                out.extend(data_frame(data, FLAG_FIN, &[]));
                                pair.done = true;
                            }
                        }
                    }
                }
                RST_STREAM if payload.len() >= 4 => {
                    let id = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                        & 0x7fff_ffff;
                    streams.remove(&id);
                }
                PING => out.extend(control_frame(PING, 0, &payload)),
                GOAWAY => return,
                _ => {}
            }
        } else {
            let id = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) & 0x7fff_ffff;
            if let Some((request, Kind::Data)) = streams.get(&id) {
                if let Some(pair) = pairs.get_mut(request) {
                    if let (Some(conn), false) = (pair.conn.as_mut(), pair.done) {
                        let reply = conn.receive(&payload);
                        if !reply.is_empty() {
                            out.extend(data_frame(id, 0, &reply));
                        }
                        if flags & FLAG_FIN != 0 {
                            conn.client_closed();
                        }
                        if conn.is_closed() {
                            out.extend(data_frame(id, FLAG_FIN, &[]));
                            if let Some(e) = pair.error {
                                out.extend(data_frame(e, FLAG_FIN, &[]));
                            }
                            pair.done = true;
                        }
                    }
                }
            }
        }
        if !out.is_empty() && (wr.write_all(&out).await.is_err() || wr.flush().await.is_err()) {
            return;
        }
        pairs.retain(|_, p| !p.done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_is_the_spdy3_one() {
        let d = dictionary();
        assert_eq!(d.len(), 1423);
        // zlib names a preset dictionary by its Adler-32 checksum.
        let (mut a, mut b) = (1u32, 0u32);
        for x in &d {
            a = (a + *x as u32) % 65521;
            b = (b + a) % 65521;
        }
        assert_eq!((b << 16) | a, 0xe3c6a7c2);
    }

    #[test]
    fn header_blocks_round_trip_across_one_zlib_stream() {
        let mut client = HeaderCodec::new();
        let mut server = HeaderCodec::new();
        for i in 0..3 {
            let id = i.to_string();
            let block =
                client.encode(&[("streamtype", "data"), ("port", "8080"), ("requestid", &id)]);
            let h = server.decode(&block).unwrap();
            assert_eq!(
                h,
                vec![
                    ("streamtype".into(), "data".into()),
                    ("port".into(), "8080".into()),
                    ("requestid".into(), id)
                ]
            );
        }
        assert!(server.decode(b"\x00garbage").is_err());
    }

    #[tokio::test]
    async fn forwards_echo_and_reports_closed_ports() {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        tokio::spawn(serve_portforward(
            server,
            |p| (p == 7000).then_some(Listener::Echo),
            |p| format!("refused {p}"),
        ));
        let mut codec = HeaderCodec::new();
        let syn = |codec: &mut HeaderCodec, id: u32, kind: &str, port: &str, req: &str| {
            let block = codec.encode(&[("streamtype", kind), ("port", port), ("requestid", req)]);
            control_frame(
                SYN_STREAM,
                0,
                &[&id.to_be_bytes()[..], &[0u8; 6][..], &block[..]].concat(),
            )
        };
        let mut frames = syn(&mut codec, 1, "error", "7000", "0");
        frames.extend(syn(&mut codec, 3, "data", "7000", "0"));
        frames.extend(data_frame(3, 0, b"ping"));
        frames.extend(syn(&mut codec, 5, "error", "9", "1"));
        frames.extend(syn(&mut codec, 7, "data", "9", "1"));
        client.write_all(&frames).await.unwrap();
        let mut got = Vec::new();
        let want_refusal = data_frame(5, FLAG_FIN, b"refused 9");
        while !got
            .windows(want_refusal.len())
            .any(|w| w == want_refusal.as_slice())
        {
            let mut buf = [0u8; 4096];
            let n = tokio::time::timeout(std::time::Duration::from_secs(5), client.read(&mut buf))
                .await
                .unwrap()
                .unwrap();
            assert!(n > 0, "server closed early");
            got.extend_from_slice(&buf[..n]);
        }
        let echo = data_frame(3, 0, b"ping");
        assert!(
            got.windows(echo.len()).any(|w| w == echo.as_slice()),
            "no echo in {:?}",
            got
        );
    }
}
