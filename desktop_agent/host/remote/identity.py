"""The phone page's keys: the server's self-signed certificate and the pairing cryptography.

- ``Identity``: an ECDSA P-256 key and a self-signed certificate, made once and kept in the state directory
  (``cert.pem``, ``key.pem``, 0600), so a paired phone sees the same certificate after a restart. Its SHA-256
  fingerprint (of the DER certificate, as browsers show it) travels in the pairing QR; ``spki_sha256_b64`` is the
  public key's pin (Chromium's ``--ignore-certificate-errors-spki-list``).
- Pairing (KDE Connect's anchor: both sides show a verification key; per-device keys): the phone and the desktop
  each make an ephemeral ECDH P-256 key and a nonce; the device key is HKDF-SHA256 of the shared secret (salt: both
  nonces) and never travels; the verification code is six digits of SHA-256 over the certificate fingerprint,
  both public keys and both nonces — a man in the middle has other keys, so the codes differ.
- Answers: HMAC-SHA256 with the device key over ``answer_message(...)``.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.x509.oid import NameOID

from desktop_agent.util.fileio import write_bytes_atomic

DEVICE_KEY_INFO = b"desktop-agent device key v1"
VERIFY_LABEL = "desktop-agent pairing v1"
ANSWER_LABEL = "desktop-agent answer v1"
EVENTS_LABEL = "desktop-agent events v1"


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64u(text: str) -> bytes:
    if not isinstance(text, str) or len(text) > 4096:
        raise ValueError("bad base64")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def write_secret(path: Path, data: bytes) -> None:
    """Atomically, mode 0600 (the directory 0700)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    write_bytes_atomic(str(path), data, mode=0o600)
    os.chmod(path, 0o600)


@dataclass(frozen=True)
class Identity:
    cert_pem: bytes
    key_pem: bytes
    fingerprint: str  # SHA-256 of the DER certificate, hex pairs joined by ":" (upper case)
    spki_sha256_b64: str


def _make(names: list[str]) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Desktop Agent phone page")])
    now = datetime.datetime.now(datetime.timezone.utc)
    alt: list[x509.GeneralName] = [x509.DNSName("localhost")]
    for name in names:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt.append(x509.DNSName(name))
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def load_identity(state_dir: Path, names: list[str] | None = None) -> Identity:
    """The certificate and key of ``state_dir`` (made there on first use)."""
    cert_path, key_path = state_dir / "cert.pem", state_dir / "key.pem"
    if not (cert_path.exists() and key_path.exists()):
        cert_pem, key_pem = _make(names or ["127.0.0.1"])
        write_secret(key_path, key_pem)
        write_secret(cert_path, cert_pem)
    cert_pem, key_pem = cert_path.read_bytes(), key_path.read_bytes()
    cert = x509.load_pem_x509_certificate(cert_pem)
    der = cert.public_bytes(serialization.Encoding.DER)
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    fingerprint = ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())
    return Identity(cert_pem, key_pem, fingerprint, base64.b64encode(hashlib.sha256(spki).digest()).decode())


# ---------------------------------------------------------------- pairing
@dataclass
class Exchange:
    """The desktop's half of one pairing exchange."""

    server_pub: bytes  # uncompressed point, 65 bytes
    server_nonce: bytes
    device_key: bytes
    verification: str  # "123 456"


def verification_code(fingerprint: str, phone_pub: bytes, server_pub: bytes, phone_nonce: bytes,
                      server_nonce: bytes) -> str:
    """Six digits both sides compute from what each saw (the page does the same with WebCrypto)."""
    text = "\n".join([VERIFY_LABEL, fingerprint, b64u(phone_pub), b64u(server_pub), b64u(phone_nonce),
                      b64u(server_nonce)])
    digest = hashlib.sha256(text.encode()).digest()
    number = int.from_bytes(digest[:4], "big") % 1_000_000
    return f"{number // 1000:03d} {number % 1000:03d}"


def exchange(fingerprint: str, phone_pub: bytes, phone_nonce: bytes) -> Exchange:
    if len(phone_pub) != 65 or phone_pub[0] != 4 or len(phone_nonce) != 16:
        raise ValueError("bad pairing key")
    peer = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), phone_pub)  # checks the point is on the curve
    mine = ec.generate_private_key(ec.SECP256R1())
    server_pub = mine.public_key().public_bytes(serialization.Encoding.X962,
                                                serialization.PublicFormat.UncompressedPoint)
    server_nonce = os.urandom(16)
    shared = mine.exchange(ec.ECDH(), peer)
    device_key = HKDF(algorithm=hashes.SHA256(), length=32, salt=phone_nonce + server_nonce,
                      info=DEVICE_KEY_INFO).derive(shared)
    return Exchange(server_pub, server_nonce, device_key,
                    verification_code(fingerprint, phone_pub, server_pub, phone_nonce, server_nonce))


# ---------------------------------------------------------------- answers
def answer_message(session_id: str, request_id: str, input_sha256: str, nonce: str, ts: str, behavior: str,
                   accepted: str, feedback: str) -> bytes:
    """What an answer's HMAC covers: the question it answers (session, request, the input's sha256), its nonce and
    time, and the decision itself."""
    return "\n".join([ANSWER_LABEL, session_id, request_id, input_sha256, nonce, ts, behavior, accepted,
                      feedback]).encode("utf-8")


def events_message(device_id: str, challenge: str, nonce: str) -> bytes:
    return "\n".join([EVENTS_LABEL, device_id, challenge, nonce]).encode("utf-8")


def mac(key: bytes, message: bytes) -> str:
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def mac_ok(key: bytes, message: bytes, given: object) -> bool:
    return isinstance(given, str) and hmac.compare_digest(mac(key, message), given)
