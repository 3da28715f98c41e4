//! A small XML writer for responses (escaping done once, here), and request-body parsing helpers.

pub struct Writer {
    out: String,
}

impl Default for Writer {
    fn default() -> Self {
        Self::new()
    }
}

impl Writer {
    pub fn new() -> Self {
        Self { out: String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n") }
    }

    /// Opens the root element with the S3 namespace.
    pub fn root(&mut self, name: &str) {
        self.out.push('<');
        self.out.push_str(name);
        self.out.push_str(" xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    }

    /// Opens the root element with another namespace (STS answers).
    pub fn open_ns(&mut self, name: &str, namespace: &str) {
        self.out.push_str(&format!("<{name} xmlns=\"{namespace}\">"));
    }

    pub fn open(&mut self, name: &str) {
        self.out.push('<');
        self.out.push_str(name);
        self.out.push('>');
    }

    pub fn close(&mut self, name: &str) {
        self.out.push_str("</");
        self.out.push_str(name);
        self.out.push('>');
    }

    pub fn elem(&mut self, name: &str, text: &str) {
        self.open(name);
        escape_into(&mut self.out, text);
        self.close(name);
    }

    pub fn finish(self) -> String {
        self.out
    }
}

/// `text` escaped for XML character data.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_into(&mut out, text);
    out
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 cannot carry literally are written as references.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {
                out.push_str(&format!("&#x{:X};", c as u32));
            }
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
}

/// `<tag><ID>…</ID><DisplayName>…</DisplayName></tag>`.
pub fn write_owner(x: &mut Writer, tag: &str, owner: &strata_object::Owner) {
    x.open(tag);
    x.elem("ID", &owner.id);
    x.elem("DisplayName", &owner.display_name);
    x.close(tag);
}

/// Appends the character data of a text or entity-reference event to `text`, entities resolved;
/// other events add nothing.
pub fn append_text(event: &quick_xml::events::Event<'_>, text: &mut String) -> Result<(), MalformedXml> {
    use quick_xml::events::Event;
    match event {
        Event::Text(t) => {
            let raw = t.decode().map_err(|_| MalformedXml)?;
            text.push_str(&quick_xml::escape::unescape(&raw).map_err(|_| MalformedXml)?);
        }
        Event::GeneralRef(r) => {
            let reference = format!("&{};", r.decode().map_err(|_| MalformedXml)?);
            text.push_str(&quick_xml::escape::unescape(&reference).map_err(|_| MalformedXml)?);
        }
        _ => {}
    }
    Ok(())
}

/// Whether the document's root element is `name` (`<Retention/>` included).
pub fn has_root(doc: &[u8], name: &str) -> Result<bool, MalformedXml> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(doc);
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf).map_err(|_| MalformedXml)? {
            Event::Start(e) | Event::Empty(e) => return Ok(e.local_name().as_ref() == name.as_bytes()),
            Event::Eof => return Ok(false),
            _ => {}
        }
        buf.clear();
    }
}

/// A request document that is not well-formed XML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedXml;

/// The text of the first `<name>` element in `xml`, if the document parses.
pub fn first_text(xml: &[u8], name: &str) -> Result<Option<String>, MalformedXml> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut inside = false;
    loop {
        match reader.read_event_into(&mut buf).map_err(|_| MalformedXml)? {
            Event::Start(e) if e.local_name().as_ref() == name.as_bytes() => inside = true,
            Event::Text(t) if inside => {
                let text = t.decode().map_err(|_| MalformedXml)?;
                return Ok(Some(text.into_owned()));
            }
            Event::End(_) if inside => return Ok(Some(String::new())),
            Event::Eof => return Ok(None),
            _ => {}
        }
        buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        let mut w = Writer::new();
        w.elem("Key", "a<b>&\"'\u{1}");
        assert!(w.finish().ends_with("<Key>a&lt;b&gt;&amp;&quot;&apos;&#x1;</Key>"));
    }

    #[test]
    fn reads_location() {
        let doc = b"<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>";
        assert_eq!(first_text(doc, "LocationConstraint"), Ok(Some("eu-west-1".into())));
        assert!(first_text(b"<a><b></a>", "x").is_err());
    }
}
