// Package authtoken issues and checks the bookingAuthToken of docs/reference/nodered-endpoints.md §1.1:
// the HMAC-signed proof, handed out by createPatient, that a caller may book
// for one patientGUID.
//
// # Format (byte-compatible with the Node-RED flow)
//
//	token     = payloadB64 "." signature
//	payloadB64 = base64url(JSON{sessionId, patientGUID, createdAt, expiresAt, nonce})
//	signature = base64url(HMAC-SHA256(secret, payloadB64))
//
// base64url is RFC 4648 §5 without padding, like Node's Buffer 'base64url'.
// The JSON keys come in the seed's order; createdAt and expiresAt are Unix
// milliseconds, expiresAt = createdAt + TTL (15 minutes by default); nonce is
// 12 lowercase hex digits (6 random bytes). A token made by the Node-RED flow
// with the same secret validates here and the other way round: the signature
// covers the payload string as sent, so validation never re-encodes JSON.
//
// # Validation
//
// Validate runs the seed's five checks in the seed's order and stops at the
// first failure, which is an *Error carrying one of the seed's codes:
//
//  1. present                 BOOKING_AUTH_MISSING
//  2. two non-empty parts     BOOKING_AUTH_MALFORMED
//     HMAC of part 1 = part 2 BOOKING_AUTH_SIGNATURE_INVALID (constant time)
//  3. payload decodes         BOOKING_AUTH_MALFORMED (base64url, JSON, field types)
//  4. now ≤ expiresAt         BOOKING_AUTH_EXPIRED (enforced; the original stopped checking)
//  5. GUIDs equal             BOOKING_AUTH_GUID_MISMATCH
//
// The payload is parsed only after its signature is verified, so a forged
// token can never reach the JSON decoder. Tokens over MaxTokenLen bytes are
// malformed before any HMAC work.
//
// # Decisions
//
//   - GUIDs compare case-insensitively (the seed uses !==). A GUID is a
//     hexadecimal number; Cloud9 answers upper case and an LLM often
//     re-types it in lower case. The token binds one patient either way, so
//     nothing is lost; the token's own spelling is what Payload returns.
//   - No default secret: Config.Secret is required and at least 16 bytes
//     (the original had a hard-coded fallback).
//   - The clock is injected (Config.Now), and so is the nonce source.
//
// # Modes
//
// Decide applies the three auth methods of the seed's table under a Mode:
// ModeSession (the default: a valid token, or no token and the session
// cache's GUID equals the request's), ModeToken (a valid token is required)
// and ModeLegacy (as session, and also any well-formed GUID without a token;
// the original's hole, available only when chosen explicitly).
package authtoken
