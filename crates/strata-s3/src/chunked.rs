//! The `aws-chunked` content encoding of streaming uploads: `hex-size[;chunk-signature=sig]\r\n`,
//! the data, `\r\n`, …, a zero-size chunk, then optional trailing headers and `\r\n`.
//!
//! The decoder is fed the body as it arrives and yields the data as slices of the input (no copy).
//! With a [`ChunkSigner`], every chunk's signature (and the trailer signature) is checked.

use bytes::Bytes;
use sha2::{Digest, Sha256};
use strata_object::BodyError;
use strata_types::limits::{CHUNK_HEADER_LEN_MAX, CHUNK_TRAILERS_MAX};

use strata_sign::constant_time_eq;
use strata_sign::sigv4::ChunkSigner;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Header,
    Data { remaining: u64 },
    DataEnd,
    Trailers,
    Done,
}

pub struct ChunkedDecoder {
    state: State,
    line: Vec<u8>,
    signer: Option<ChunkSigner>,
    chunk_signature: Option<String>,
    chunk_hash: Sha256,
    trailers: Vec<(String, String)>,
    trailer_signature: Option<String>,
}

fn malformed(msg: &str) -> BodyError {
    BodyError::Malformed(msg.to_owned())
}

impl ChunkedDecoder {
    pub fn new(signer: Option<ChunkSigner>) -> Self {
        Self {
            state: State::Header,
            line: Vec::new(),
            signer,
            chunk_signature: None,
            chunk_hash: Sha256::new(),
            trailers: Vec::new(),
            trailer_signature: None,
        }
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Trailing headers (`x-amz-checksum-*`), lowercased names.
    pub fn trailers(&self) -> &[(String, String)] {
        &self.trailers
    }

    /// Takes one line (ending in CRLF) from `input`; `None` while the line is incomplete.
    fn take_line(&mut self, input: &mut Bytes) -> Result<Option<Vec<u8>>, BodyError> {
        match input.iter().position(|&b| b == b'\n') {
            Some(pos) => {
                self.line.extend_from_slice(&input.split_to(pos + 1));
                if self.line.len() > CHUNK_HEADER_LEN_MAX + 2 {
                    return Err(malformed("chunk header or trailer line too long"));
                }
                let mut line = std::mem::take(&mut self.line);
                if line.len() < 2 || line[line.len() - 2] != b'\r' {
                    return Err(malformed("chunk line does not end in CRLF"));
                }
                line.truncate(line.len() - 2);
                Ok(Some(line))
            }
            None => {
                self.line.extend_from_slice(input);
                input.clear();
                if self.line.len() > CHUNK_HEADER_LEN_MAX {
                    return Err(malformed("chunk header too long"));
                }
                Ok(None)
            }
        }
    }

    /// Decodes `input`, appending data slices to `out`.
    pub fn feed(&mut self, mut input: Bytes, out: &mut Vec<Bytes>) -> Result<(), BodyError> {
        while !input.is_empty() {
            match self.state {
                State::Header => {
                    let Some(line) = self.take_line(&mut input)? else { break };
                    self.start_chunk(&line)?;
                }
                State::Data { remaining } => {
                    let n = (remaining as usize).min(input.len());
                    let data = input.split_to(n);
                    if self.signer.is_some() {
                        self.chunk_hash.update(&data);
                    }
                    out.push(data);
                    self.state = State::Data { remaining: remaining - n as u64 };
                    if remaining == n as u64 {
                        self.end_chunk()?;
                        self.state = State::DataEnd;
                    }
                }
                State::DataEnd => {
                    let Some(line) = self.take_line(&mut input)? else { break };
                    if !line.is_empty() {
                        return Err(malformed("chunk data longer than its size"));
                    }
                    self.state = State::Header;
                }
                State::Trailers => {
                    let Some(line) = self.take_line(&mut input)? else { break };
                    if line.is_empty() {
                        self.finish_trailers()?;
                        self.state = State::Done;
                        continue;
                    }
                    let text = String::from_utf8(line).map_err(|_| malformed("trailer is not UTF-8"))?;
                    let (name, value) = text.split_once(':').ok_or_else(|| malformed("trailer lacks ':'"))?;
                    let name = name.trim().to_ascii_lowercase();
                    if self.trailers.len() + usize::from(self.trailer_signature.is_some())
                        >= CHUNK_TRAILERS_MAX
                    {
                        return Err(malformed("too many trailing headers"));
                    }
                    if name == "x-amz-trailer-signature" {
                        self.trailer_signature = Some(value.trim().to_owned());
                    } else {
                        self.trailers.push((name, value.trim().to_owned()));
                    }
                }
                State::Done => return Err(malformed("bytes after the final chunk")),
            }
        }
        Ok(())
    }

    fn start_chunk(&mut self, line: &[u8]) -> Result<(), BodyError> {
        let text = std::str::from_utf8(line).map_err(|_| malformed("chunk header is not ASCII"))?;
        let (size, ext) = text.split_once(';').unwrap_or((text, ""));
        let size = u64::from_str_radix(size.trim(), 16).map_err(|_| malformed("chunk size is not hex"))?;
        self.chunk_signature = ext.trim().strip_prefix("chunk-signature=").map(str::to_owned);
        if self.signer.is_some() && self.chunk_signature.is_none() {
            return Err(BodyError::SignatureMismatch);
        }
        if size == 0 {
            self.end_chunk()?;
            self.state = State::Trailers;
        } else {
            self.state = State::Data { remaining: size };
        }
        Ok(())
    }

    fn end_chunk(&mut self) -> Result<(), BodyError> {
        if let Some(signer) = &mut self.signer {
            let hash = hex::encode(std::mem::take(&mut self.chunk_hash).finalize());
            let expected = signer.next_chunk(&hash);
            let got = self.chunk_signature.take().unwrap_or_default();
            if !constant_time_eq(expected.as_bytes(), got.as_bytes()) {
                return Err(BodyError::SignatureMismatch);
            }
        }
        Ok(())
    }

    fn finish_trailers(&mut self) -> Result<(), BodyError> {
        if let (Some(signer), false) = (&mut self.signer, self.trailers.is_empty()) {
            let mut canonical = Vec::new();
            for (name, value) in &self.trailers {
                canonical.extend_from_slice(format!("{name}:{value}\n").as_bytes());
            }
            let expected = signer.trailer(&canonical);
            let got = self.trailer_signature.take().unwrap_or_default();
            if !constant_time_eq(expected.as_bytes(), got.as_bytes()) {
                return Err(BodyError::SignatureMismatch);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(
        body: &[u8],
        split: usize,
        signer: Option<ChunkSigner>,
    ) -> Result<(Vec<u8>, ChunkedDecoder), BodyError> {
        let mut d = ChunkedDecoder::new(signer);
        let mut out = Vec::new();
        for piece in body.chunks(split.max(1)) {
            d.feed(Bytes::copy_from_slice(piece), &mut out)?;
        }
        Ok((out.concat(), d))
    }

    #[test]
    fn unsigned_with_trailer_any_split() {
        let body = b"5\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n";
        for split in 1..body.len() {
            let (data, d) = decode_all(body, split, None).expect("decodes");
            assert_eq!(data, b"hello world");
            assert!(d.is_done());
            assert_eq!(d.trailers(), [("x-amz-checksum-crc32".to_owned(), "DUoRhQ==".to_owned())]);
        }
    }

    #[test]
    fn malformed_bodies_are_errors() {
        for bad in [&b"zz\r\nhello"[..], b"5\r\nhello!!\r\n", b"5\nhello\r\n", b"0\r\nnocolon\r\n\r\n"] {
            assert!(decode_all(bad, 3, None).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        assert!(decode_all(&[b'1'; 5000], 100, None).is_err());
    }

    #[test]
    fn trailers_and_lines_are_bounded() {
        let mut body = b"5\r\nhello\r\n0\r\n".to_vec();
        for i in 0..CHUNK_TRAILERS_MAX {
            body.extend_from_slice(format!("x-amz-meta-{i}:v\r\n").as_bytes());
        }
        assert!(decode_all(&[&body[..], b"\r\n"].concat(), 4096, None).is_ok());
        body.extend_from_slice(b"x-amz-meta-one-too-many:v\r\n\r\n");
        assert!(decode_all(&body, 4096, None).is_err(), "one trailer too many");
        // A long line is refused whether it arrives in pieces or whole.
        let mut long = b"5\r\nhello\r\n0\r\nx-amz-checksum-crc32:".to_vec();
        long.extend_from_slice(&[b'A'; 2 * CHUNK_HEADER_LEN_MAX]);
        long.extend_from_slice(b"\r\n\r\n");
        assert!(decode_all(&long, 100, None).is_err());
        assert!(decode_all(&long, long.len(), None).is_err());
    }

    #[test]
    fn aws_signed_example() {
        // The streaming example of the S3 API reference: 64 KiB + 1 KiB of 'a'.
        let seed = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
        let signer = || ChunkSigner {
            key: strata_sign::sigv4::signing_mac(
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "20130524",
                "us-east-1",
                "s3",
            ),
            amz_date: "20130524T000000Z".into(),
            scope: "20130524/us-east-1/s3/aws4_request".into(),
            previous: seed.into(),
        };
        let mut body = Vec::new();
        body.extend_from_slice(
            b"10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n",
        );
        body.extend_from_slice(&[b'a'; 65_536]);
        body.extend_from_slice(
            b"\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n",
        );
        body.extend_from_slice(&[b'a'; 1024]);
        body.extend_from_slice(
            b"\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n",
        );
        let (data, d) = decode_all(&body, 7919, Some(signer())).expect("signed body verifies");
        assert_eq!(data.len(), 66_560);
        assert!(d.is_done());
        body[200] = b'b';
        assert_eq!(decode_all(&body, 7919, Some(signer())).err(), Some(BodyError::SignatureMismatch));
    }
}
