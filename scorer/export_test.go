package scorer

// SetWaitingHook sets a function called when a caller of s starts to wait
// for another caller's embedding of the same expected text.
func SetWaitingHook(s *EmbeddingSimilarity, f func()) { s.waiting = f }
