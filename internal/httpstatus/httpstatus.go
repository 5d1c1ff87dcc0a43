// Package httpstatus records the status code an http.Handler writes, for
// the middlewares that report it (internal/metrics, internal/tracing).
package httpstatus

import "net/http"

// Writer wraps an http.ResponseWriter and remembers the status code
// written (200 when the handler writes a body without a header).
type Writer struct {
	http.ResponseWriter
	Code    int
	written bool
}

// Wrap returns a Writer over w.
func Wrap(w http.ResponseWriter) *Writer { return &Writer{ResponseWriter: w, Code: http.StatusOK} }

// WriteHeader records the first status code and passes it on.
func (s *Writer) WriteHeader(code int) {
	if !s.written {
		s.Code, s.written = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *Writer) Write(b []byte) (int, error) {
	s.written = true
	return s.ResponseWriter.Write(b)
}

// Flush passes flushes through (server-sent events).
func (s *Writer) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *Writer) Unwrap() http.ResponseWriter { return s.ResponseWriter }
