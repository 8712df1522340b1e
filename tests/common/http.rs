//! A minimal HTTP/1.1 GET for the tests of the HTTP port (metrics, JSON,
//! console): one request per connection (`Connection: close`), the answer
//! read to its end. Only for 127.0.0.1.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::time::Duration;

/// An HTTP answer: status code, headers (names lower-cased) and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// GETs `path` from 127.0.0.1:`port`.
pub fn get(port: u16, path: &str) -> Answer {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap_or_else(|e| panic!("connect to HTTP port {port}: {e}"));
    stream.set_read_timeout(Some(Duration::from_secs(60))).expect("set timeout");
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").expect("send request");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read answer");
    let text = String::from_utf8(raw).expect("answer is UTF-8");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no end of headers: {text}"));
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("status line: {status_line}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_string() };
    Answer { status, headers, body }
}

/// The body of a chunked transfer.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").unwrap_or_else(|| panic!("chunk size missing: {rest}"));
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or_else(|e| panic!("chunk size {size}: {e}"));
        if size == 0 {
            return out;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}
