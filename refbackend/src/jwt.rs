//! HS256 JSON Web Tokens, signed with a per-server random secret.
//!
//! The MAC is RustCrypto's `hmac` 0.12 over `sha2` 0.10 (the same `digest`
//! 0.10 stack), not a hand-written one: a server others may run should not
//! carry its own MAC. The RFC 4231 vectors below pin it. Verification goes
//! through `Mac::verify_slice`, which compares in constant time.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The secret a server signs with; random per server start, so a restart
/// invalidates every token (clients log in again, as they do on expiry).
#[derive(Clone)]
pub struct JwtKey([u8; 32]);

impl JwtKey {
    pub fn random() -> JwtKey {
        JwtKey(rand::random())
    }
}

impl std::fmt::Debug for JwtKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JwtKey(..)")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Claims {
    /// The user id.
    pub sub: i64,
    pub iat: i64,
    pub exp: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("the token is not a valid JWT")]
    Malformed,
    #[error("the token's signature does not match")]
    BadSignature,
    #[error("the token expired; log in again")]
    Expired,
}

const HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

pub fn sign(key: &JwtKey, claims: &Claims) -> String {
    let payload = serde_json::to_vec(claims).unwrap_or_default();
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(HEADER),
        URL_SAFE_NO_PAD.encode(payload)
    );
    let sig = hmac_sha256(&key.0, signing_input.as_bytes());
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig))
}

pub fn verify(key: &JwtKey, token: &str, now: i64) -> Result<Claims, JwtError> {
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Malformed);
    };
    let header = URL_SAFE_NO_PAD.decode(h).map_err(|_| JwtError::Malformed)?;
    let header: serde_json::Value =
        serde_json::from_slice(&header).map_err(|_| JwtError::Malformed)?;
    if header.get("alg").and_then(|a| a.as_str()) != Some("HS256") {
        return Err(JwtError::Malformed);
    }
    let sig = URL_SAFE_NO_PAD.decode(s).map_err(|_| JwtError::Malformed)?;
    let mut mac = keyed(&key.0);
    mac.update(format!("{h}.{p}").as_bytes());
    mac.verify_slice(&sig).map_err(|_| JwtError::BadSignature)?;
    let payload = URL_SAFE_NO_PAD.decode(p).map_err(|_| JwtError::Malformed)?;
    let claims: Claims = serde_json::from_slice(&payload).map_err(|_| JwtError::Malformed)?;
    if now >= claims.exp {
        return Err(JwtError::Expired);
    }
    Ok(claims)
}

/// Three non-empty base64url segments separated by dots: what a JWT looks
/// like. `/mcp` refuses such a bearer before looking anything up.
pub fn is_jwt_shaped(token: &str) -> bool {
    let segs: Vec<&str> = token.split('.').collect();
    segs.len() == 3
        && segs.iter().all(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'=')
        })
}

/// A MAC keyed with `key`. HMAC takes a key of any length (longer than the
/// block it is hashed first), so keying cannot fail.
fn keyed(key: &[u8]) -> HmacSha256 {
    match <HmacSha256 as Mac>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC accepts keys of every length"),
    }
}

/// HMAC-SHA256 (RFC 2104) of `msg` under `key`.
pub fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut mac = keyed(key);
    mac.update(msg);
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_rfc4231_vectors() {
        // Test case 1.
        let mac = hmac_sha256(&[0x0b; 20], b"Hi There");
        assert_eq!(
            hex::encode(mac),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        // Test case 2.
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        let mac = hmac_sha256(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            hex::encode(mac),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn sign_verify_expire_tamper() {
        let key = JwtKey::random();
        let c = Claims {
            sub: 7,
            iat: 1000,
            exp: 1900,
        };
        let t = sign(&key, &c);
        assert!(is_jwt_shaped(&t));
        assert_eq!(verify(&key, &t, 1899), Ok(c.clone()));
        assert_eq!(verify(&key, &t, 1900), Err(JwtError::Expired));
        assert_eq!(
            verify(&JwtKey::random(), &t, 1000),
            Err(JwtError::BadSignature)
        );
        let forged = sign(
            &JwtKey::random(),
            &Claims {
                sub: 1,
                iat: 1000,
                exp: 1900,
            },
        );
        let (hp, _) = forged.rsplit_once('.').unwrap();
        let (_, sig) = t.rsplit_once('.').unwrap();
        assert_eq!(
            verify(&key, &format!("{hp}.{sig}"), 1000),
            Err(JwtError::BadSignature)
        );
        for bad in ["", "a.b", "a.b.c.d", "!!.??.**", "hoopmcp_abc"] {
            assert!(verify(&key, bad, 0).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn jwt_shape_table() {
        let cases = [
            ("aaa.bbb.ccc", true),
            ("eyJhbGciOi.eyJzdWIi.sig-_x", true),
            ("hoopmcp_0123abcd", false),
            ("a..c", false),
            ("a.b", false),
            ("a.b.c.d", false),
            ("a b.c.d", false),
        ];
        for (s, want) in cases {
            assert_eq!(is_jwt_shaped(s), want, "{s:?}");
        }
    }
}
