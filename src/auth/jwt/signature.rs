//! Signatures checked by ring, as jsonwebtoken's crypto provider: RS256/384/512, PS256, ES256 and
//! ES384 (RustCrypto's P-256, jsonwebtoken's own backend, took 0.3 ms a signature here; ring takes
//! 0.06 ms). Installed once per process.

use jsonwebtoken::crypto::{CryptoProvider, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, DecodingKeyKind};
use ring::signature::{self as ring_signature, RsaPublicKeyComponents, UnparsedPublicKey};
use std::sync::Once;

/// Makes [`RING`] jsonwebtoken's provider for the process, once: jsonwebtoken is built with no
/// backend of its own, so nothing decodes a token before a [`Verifier`] exists.
pub(super) fn install_ring() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An error means a provider is installed already; there is no other in this build.
        let _ = RING.install_default();
    });
}

/// How ring checks one algorithm: RSA keys of 2048 to 8192 bits, or an EC curve.
#[derive(Clone, Copy)]
enum RingCheck {
    Rsa(&'static ring_signature::RsaParameters),
    Ec(&'static ring_signature::EcdsaVerificationAlgorithm),
}

/// A key (from a JWK: an RSA modulus and exponent, or an uncompressed EC point) and how to check
/// a signature with it.
struct RingVerifier {
    alg: Algorithm,
    check: RingCheck,
    key: DecodingKey,
}

pub(super) fn ring_verifier(alg: &Algorithm, key: &DecodingKey) -> jsonwebtoken::errors::Result<Box<dyn JwtVerifier>> {
    use jsonwebtoken::AlgorithmFamily;
    let check = match (alg, key.family()) {
        (Algorithm::RS256, AlgorithmFamily::Rsa) => RingCheck::Rsa(&ring_signature::RSA_PKCS1_2048_8192_SHA256),
        (Algorithm::RS384, AlgorithmFamily::Rsa) => RingCheck::Rsa(&ring_signature::RSA_PKCS1_2048_8192_SHA384),
        (Algorithm::RS512, AlgorithmFamily::Rsa) => RingCheck::Rsa(&ring_signature::RSA_PKCS1_2048_8192_SHA512),
        (Algorithm::PS256, AlgorithmFamily::Rsa) => RingCheck::Rsa(&ring_signature::RSA_PSS_2048_8192_SHA256),
        (Algorithm::ES256, AlgorithmFamily::Ec) => RingCheck::Ec(&ring_signature::ECDSA_P256_SHA256_FIXED),
        (Algorithm::ES384, AlgorithmFamily::Ec) => RingCheck::Ec(&ring_signature::ECDSA_P384_SHA384_FIXED),
        _ => return Err(ErrorKind::InvalidAlgorithm.into()),
    };
    Ok(Box::new(RingVerifier { alg: *alg, check, key: key.clone() }))
}

impl jsonwebtoken::signature::Verifier<Vec<u8>> for RingVerifier {
    fn verify(&self, message: &[u8], signature: &Vec<u8>) -> Result<(), jsonwebtoken::signature::Error> {
        let checked = match (self.check, self.key.kind()) {
            (RingCheck::Rsa(params), DecodingKeyKind::RsaModulusExponent { n, e }) => {
                RsaPublicKeyComponents { n: unpadded(n), e: unpadded(e) }.verify(params, message, signature)
            }
            (RingCheck::Ec(params), DecodingKeyKind::SecretOrDer(point)) => {
                UnparsedPublicKey::new(params, point).verify(message, signature)
            }
            _ => return Err(jsonwebtoken::signature::Error::new()),
        };
        checked.map_err(|_| jsonwebtoken::signature::Error::new())
    }
}

/// `bytes` without leading zero bytes, which ring refuses in an RSA modulus or exponent and a JWK
/// should not have, but may.
pub(super) fn unpadded(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    &bytes[start..]
}

impl JwtVerifier for RingVerifier {
    fn algorithm(&self) -> Algorithm {
        self.alg
    }
}

/// jsonwebtoken's crypto backend: ring verifies, and nothing signs (studioflow never issues tokens).
static RING: CryptoProvider = CryptoProvider {
    signer_factory: |_, _| Err(ErrorKind::Provider("studioflow verifies tokens and signs none".into()).into()),
    verifier_factory: ring_verifier,
    // Only deriving a JWK from a private key needs these, and studioflow never does.
    key_utils: KeyUtils::new_unimplemented(),
};

