// Package transport is what the transport layers (httplimit, grpclimit, and
// envoyrls for its draft headers) share about making keys and describing
// policies, so that each says the same thing in the same words instead of
// keeping a copy:
//
//   - Key kinds. Every key a key function finds is tagged with its kind,
//     kind ":" value, as in "ip:203.0.113.9" or "header:x-api-key:k-1", so
//     that keys of two kinds never collide: an API key that reads like an
//     address is not that address.
//   - Host keys. The Host header and :authority in one canonical form per
//     host (case, a trailing dot, the port 443 or 80), see Host.
//   - Client IP. The peer's address, or behind trusted proxies the forwarding
//     header read right to left; IPv6 grouped by /64.
//   - Policy texts. The derived policy name and the RateLimit-Policy and
//     RateLimit items of draft-ietf-httpapi-ratelimit-headers, formatted once
//     per Config.
package transport
