//! HS256 JSON Web Tokens, signed with a per-server random secret.
//!
//! Framing, signing and validation are `jsonwebtoken`'s: a `Validation`
//! that accepts HS256 only (a token naming any other algorithm, `none`
//! included, is refused), requires `exp` (and [`Claims`] `iat` and `sub`),
//! and checks `exp`
//! and `nbf` with no leeway. Those checks read the wall clock; the server's
//! own [`crate::Clock`] (wall time plus a forward-only offset that tests and
//! operators move) is then checked too, so a token expires by whichever
//! comes first — which is always the server's clock.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

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
    /// Not valid before; the server never sets it (its clock may run ahead
    /// of the wall clock), but a token that carries one is held to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("the token is not a valid JWT")]
    Malformed,
    #[error("the token's signature does not match")]
    BadSignature,
    #[error("the token expired; log in again")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
}

/// The one validation every token goes through.
fn validation() -> Validation {
    let mut v = Validation::new(Algorithm::HS256);
    v.leeway = 0;
    v.validate_exp = true;
    v.validate_nbf = true;
    // `sub` and `iat` are required by [`Claims`] itself (the crate counts
    // only a string `sub` as present; ours is the numeric user id).
    v.set_required_spec_claims(&["exp"]);
    v
}

pub fn sign(key: &JwtKey, claims: &Claims) -> String {
    // A 32-byte HMAC key and a plain struct: neither step can fail.
    EncodingKey::from_secret(&key.0)
        .and_then(|k| jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &k))
        .unwrap_or_default()
}

/// The token's claims, if `key` signed it, it names HS256, and it is valid
/// at `now` (the server's clock) and at the wall clock.
pub fn verify(key: &JwtKey, token: &str, now: i64) -> Result<Claims, JwtError> {
    let k = DecodingKey::from_secret(&key.0).map_err(|_| JwtError::Malformed)?;
    let data =
        jsonwebtoken::decode::<Claims>(token, &k, &validation()).map_err(|e| match e.kind() {
            ErrorKind::InvalidSignature => JwtError::BadSignature,
            ErrorKind::ExpiredSignature => JwtError::Expired,
            ErrorKind::ImmatureSignature => JwtError::NotYetValid,
            _ => JwtError::Malformed,
        })?;
    let claims = data.claims;
    if now >= claims.exp {
        return Err(JwtError::Expired);
    }
    if claims.nbf.is_some_and(|nbf| now < nbf) {
        return Err(JwtError::NotYetValid);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn wall() -> i64 {
        hoop_core::clock::now_unix()
    }

    fn claims(iat: i64, exp: i64) -> Claims {
        Claims {
            sub: 7,
            iat,
            exp,
            nbf: None,
        }
    }

    #[test]
    fn sign_verify_expire_tamper() {
        let key = JwtKey::random();
        let now = wall();
        let c = claims(now, now + 900);
        let t = sign(&key, &c);
        assert!(is_jwt_shaped(&t));
        assert_eq!(verify(&key, &t, now + 899), Ok(c.clone()));
        // The server's clock ahead of the wall clock expires it.
        assert_eq!(verify(&key, &t, now + 900), Err(JwtError::Expired));
        // So does the wall clock (a token minted for the past).
        let old = sign(&key, &claims(now - 1000, now - 100));
        assert_eq!(verify(&key, &old, now - 200), Err(JwtError::Expired));
        assert_eq!(
            verify(&JwtKey::random(), &t, now),
            Err(JwtError::BadSignature)
        );
        let forged = sign(
            &JwtKey::random(),
            &Claims {
                sub: 1,
                ..c.clone()
            },
        );
        let (hp, _) = forged.rsplit_once('.').unwrap();
        let (_, sig) = t.rsplit_once('.').unwrap();
        assert_eq!(
            verify(&key, &format!("{hp}.{sig}"), now),
            Err(JwtError::BadSignature)
        );
        for bad in ["", "a.b", "a.b.c.d", "!!.??.**", "hoopmcp_abc"] {
            assert!(verify(&key, bad, 0).is_err(), "{bad:?}");
        }
    }

    /// The algorithm is pinned: a token that names another one (`none`, or
    /// HS384 signed with the same secret) is refused.
    #[test]
    fn only_hs256_is_accepted() {
        use base64::Engine;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let key = JwtKey::random();
        let now = wall();
        let c = claims(now, now + 900);
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&c).unwrap());
        let none = format!("{}.{payload}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#));
        assert_eq!(verify(&key, &none, now), Err(JwtError::Malformed));
        let hs384 = jsonwebtoken::encode(
            &Header::new(Algorithm::HS384),
            &c,
            &EncodingKey::from_secret(&key.0).unwrap(),
        )
        .unwrap();
        assert_eq!(verify(&key, &hs384, now), Err(JwtError::Malformed));
        // Must not fire: the same claims as HS256.
        assert_eq!(verify(&key, &sign(&key, &c), now), Ok(c));
    }

    #[test]
    fn nbf_and_required_claims_are_checked() {
        let key = JwtKey::random();
        let now = wall();
        let later = Claims {
            nbf: Some(now + 100),
            ..claims(now, now + 900)
        };
        let t = sign(&key, &later);
        assert_eq!(verify(&key, &t, now), Err(JwtError::NotYetValid));
        // Without exp: refused, whatever the signature.
        let no_exp = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &serde_json::json!({"sub": 7, "iat": now}),
            &EncodingKey::from_secret(&key.0).unwrap(),
        )
        .unwrap();
        assert_eq!(verify(&key, &no_exp, now), Err(JwtError::Malformed));
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
