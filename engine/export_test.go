package engine

// SetJoinedHook makes x call f (under its lock) whenever a call waits for
// a page load another call started.
func SetJoinedHook(x *IndexedItems, f func(page int)) { x.joined = f }
