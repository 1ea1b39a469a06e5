//! The app's `Set-Cookie` headers, kept to the preview's own host: a
//! `Domain` attribute (`Domain=localhost` would reach Duet's origin and
//! every other preview) is taken off, which leaves a host-only cookie, and
//! a cookie named as Duet's credential is dropped.

use super::COOKIE_NAME;
use axum::http::header::{HeaderMap, HeaderValue, SET_COOKIE};

/// Rewrites the response's `Set-Cookie` headers as above.
pub(crate) fn confine(headers: &mut HeaderMap) {
    let given: Vec<HeaderValue> = headers.get_all(SET_COOKIE).iter().cloned().collect();
    if given.is_empty() {
        return;
    }
    headers.remove(SET_COOKIE);
    for value in given {
        let Some(kept) = value.to_str().ok().and_then(confined) else {
            continue;
        };
        if let Ok(value) = HeaderValue::from_str(&kept) {
            headers.append(SET_COOKIE, value);
        }
    }
}

/// One `Set-Cookie` value without `Domain`, or `None` when it is Duet's.
fn confined(cookie: &str) -> Option<String> {
    let mut parts = cookie.split(';');
    let pair = parts.next()?.trim();
    let name = pair.split('=').next().unwrap_or_default().trim();
    if name.is_empty() || name.eq_ignore_ascii_case(COOKIE_NAME) {
        return None;
    }
    let attributes = parts.map(str::trim).filter(|attribute| {
        let key = attribute.split('=').next().unwrap_or_default().trim();
        !attribute.is_empty() && !key.eq_ignore_ascii_case("domain")
    });
    Some(
        std::iter::once(pair)
            .chain(attributes)
            .collect::<Vec<_>>()
            .join("; "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_stay_on_the_preview_s_host() {
        assert_eq!(
            confined("tracker=1; Domain=localhost; Path=/; HttpOnly").as_deref(),
            Some("tracker=1; Path=/; HttpOnly")
        );
        assert_eq!(confined("a=1;domain = .x").as_deref(), Some("a=1"));
        assert_eq!(confined("duet_preview=forged; Path=/"), None);
        assert_eq!(confined("DUET_PREVIEW=forged"), None);
        let mut headers = HeaderMap::new();
        headers.append(SET_COOKIE, "a=1; Domain=localhost".parse().unwrap());
        headers.append(SET_COOKIE, "b=2".parse().unwrap());
        confine(&mut headers);
        let kept: Vec<_> = headers.get_all(SET_COOKIE).iter().collect();
        assert_eq!(kept, ["a=1", "b=2"]);
    }
}
