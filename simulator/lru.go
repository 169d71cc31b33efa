package simulator

import "container/list"

// lru holds a face's threads, conversations, responses or sessions by
// key, evicting the least recently used beyond max entries or beyond
// maxStoredBytes of what they hold. Guarded by its owner's mutex.
type lru[V any] struct {
	max   int
	byKey map[string]*list.Element // of *lruItem[V]
	order *list.List               // most recently used first
	bytes int
}

type lruItem[V any] struct {
	key   string
	v     V
	bytes int
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, byKey: map[string]*list.Element{}, order: list.New()}
}

// get returns the entry of key and marks it used.
func (l *lru[V]) get(key string) (V, bool) {
	e, ok := l.byKey[key]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruItem[V]).v, true
}

// put adds or replaces the entry of key, holding bytes, as the most
// recently used.
func (l *lru[V]) put(key string, v V, bytes int) {
	l.remove(key)
	l.byKey[key] = l.order.PushFront(&lruItem[V]{key: key, v: v})
	l.grow(key, bytes)
}

// grow adds n bytes to what key's entry holds, if it is still held, and
// evicts others beyond the limits.
func (l *lru[V]) grow(key string, n int) {
	e, ok := l.byKey[key]
	if !ok {
		return
	}
	e.Value.(*lruItem[V]).bytes += n
	l.bytes += n
	for len(l.byKey) > l.max || l.bytes > maxStoredBytes {
		back := l.order.Back()
		if back == e {
			return
		}
		l.remove(back.Value.(*lruItem[V]).key)
	}
}

// remove drops the entry of key and reports whether there was one.
func (l *lru[V]) remove(key string) bool {
	e, ok := l.byKey[key]
	if ok {
		l.order.Remove(e)
		delete(l.byKey, key)
		l.bytes -= e.Value.(*lruItem[V]).bytes
	}
	return ok
}

// all returns the entries, in no order.
func (l *lru[V]) all() []V {
	out := make([]V, 0, len(l.byKey))
	for _, e := range l.byKey {
		out = append(out, e.Value.(*lruItem[V]).v)
	}
	return out
}
