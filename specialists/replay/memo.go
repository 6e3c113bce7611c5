package replay

import (
	"crypto/sha256"
	"sync"
)

// Memo caches a pure function of a string. A playbook replays its whole
// program on every turn, so the same response bodies are scanned again and
// again; the cache only saves that work and cannot change any result.
type Memo[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

// memoMax bounds a cache; a full cache starts over.
const memoMax = 4096

// Get returns f(text), computed once per text while the cache holds it.
func (c *Memo[T]) Get(text string, f func(string) T) T {
	key := text
	if len(text) > 512 {
		sum := sha256.Sum256([]byte(text))
		key = string(sum[:])
	}
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = f(text)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= memoMax {
		c.m = map[string]T{}
	}
	c.m[key] = v
	c.mu.Unlock()
	return v
}
