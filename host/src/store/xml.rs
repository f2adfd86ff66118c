//! The little of S3's XML answers vmdump reads: the text of named elements
//! (an upload id, an error's code and message, a listing's keys). S3's
//! answers are flat and element names do not repeat at other depths, so a
//! search for `<Name>...</Name>` is exact; entities are decoded.

/// The text of each `<tag>` element of `body`, in order.
pub fn texts(body: &[u8], tag: &str) -> Vec<String> {
    elements(&String::from_utf8_lossy(body), tag).into_iter().map(decode).collect()
}

/// The content of each `<tag>` element of `text`, as it is (undecoded: an
/// element holding others, such as a listing's `<Contents>`).
pub fn elements<'t>(text: &'t str, tag: &str) -> Vec<&'t str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        rest = &rest[start + open.len()..];
        let Some(end) = rest.find(&close) else { break };
        found.push(&rest[..end]);
        rest = &rest[end + close.len()..];
    }
    found
}

/// The text of the first `<tag>` element of `body`.
pub fn text(body: &[u8], tag: &str) -> Option<String> {
    texts(body, tag).into_iter().next()
}

/// The code and message of an S3 error answer (empty when the body is
/// none: a HEAD, or a proxy's page).
pub fn error(body: &[u8]) -> (String, String) {
    let message = text(body, "Message").unwrap_or_else(|| {
        let raw = String::from_utf8_lossy(body);
        raw.chars().take(200).collect::<String>().trim().to_string()
    });
    (text(body, "Code").unwrap_or_default(), message)
}

/// `text` with XML's five named entities and numeric references decoded.
fn decode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let Some(semi) = rest.find(';') else { break };
        let entity = &rest[1..semi];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .map(|hex| u32::from_str_radix(hex, 16))
                .or_else(|| entity.strip_prefix('#').map(str::parse))
                .and_then(Result::ok)
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `text` escaped for an element's content.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_and_entities() {
        let body = b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>a &lt;b&gt; &amp; &#233;&#x21;</Message></Error>";
        assert_eq!(error(body), ("NoSuchKey".into(), "a <b> & \u{e9}!".into()));
        let list = b"<L><Contents><Key>a</Key></Contents><Contents><Key>b&amp;c</Key></Contents></L>";
        assert_eq!(texts(list, "Key"), ["a", "b&c"]);
        assert_eq!(text(list, "Size"), None);
        assert_eq!(error(b"Bad Gateway"), (String::new(), "Bad Gateway".into()));
        assert_eq!(escape("\"a&b\""), "&quot;a&amp;b&quot;");
    }
}
