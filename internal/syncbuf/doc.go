// Package syncbuf is a bytes.Buffer several goroutines may write to: the
// log destination of tests that read back what a process or a logger
// wrote.
package syncbuf
