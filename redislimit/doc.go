// Package redislimit enforces hotlimit's limiters across many processes, with
// their state in Redis.
package redislimit
