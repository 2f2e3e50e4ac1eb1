package envoyrls

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// brokenObserver is an exporter of another package that cannot report.
type brokenObserver struct{}

func (brokenObserver) Observe(hotlimit.Event) {}
func (brokenObserver) CheckObserver() error   { return errors.New("other: cannot report") }

// TestErrorsNameThePackageOnce: New given a zero Metrics said
// "envoyrls: WithObserver: envoyrls: Metrics is a zero value…", and
// NewConfig given a nil domain or rule ended its message with
// "…: envoyrls: invalid config": an error of this package wrapped by
// another named the package twice. Each now names it once, and still
// wraps what it wrapped; another package's error keeps its own prefix.
func TestErrorsNameThePackageOnce(t *testing.T) {
	cfg, err := LoadDir(copyDir(t, "testdata/conformance"))
	require.NoError(t, err)
	var zero Metrics
	for name, o := range map[string]hotlimit.Observer{"alone": &zero, "among others": hotlimit.Observers(hotlimit.ObserverFunc(func(hotlimit.Event) {}), &zero)} {
		_, err = New(cfg, WithObserver(o))
		assert.EqualError(t, err, "envoyrls: WithObserver: Metrics is a zero value, which counts nothing: make it with envoyrls.NewMetrics", name)
		assert.ErrorIs(t, err, errNotMade, name)
	}
	_, err = New(cfg, WithObserver(brokenObserver{}))
	assert.EqualError(t, err, "envoyrls: WithObserver: other: cannot report")

	_, err = NewConfig(nil)
	assert.EqualError(t, err, "envoyrls: NewConfig: domains[0] is nil: invalid config")
	assert.ErrorIs(t, err, ErrConfig)
	_, err = NewConfig(&Domain{Name: "d", Rules: []*Rule{nil}})
	assert.EqualError(t, err, "envoyrls: NewConfig: domains[0] (d): rules[0] is nil: invalid config")
	assert.ErrorIs(t, err, ErrConfig)
}

// TestDuplicateDomainNamesWhereEach: NewConfig given two domains of one
// name that were not read from files said "': duplicate domain 'a' in
// config file (also in ): envoyrls: invalid config", a message of empty
// file names. A domain without a file is now named by its place among
// NewConfig's arguments; two read from files keep the message that names
// both, as the reference server's does.
func TestDuplicateDomainNamesWhereEach(t *testing.T) {
	d := func(file string) *Domain { return &Domain{Name: "a", File: file} }
	for _, tc := range []struct {
		a, b *Domain
		says string
	}{
		{d(""), d(""), "envoyrls: NewConfig: domains[2]: duplicate domain 'a', also domains[1]: invalid config"},
		{d("x.yaml"), d(""), "envoyrls: NewConfig: domains[2]: duplicate domain 'a', also domains[1] (file x.yaml): invalid config"},
		{d(""), d("y.yaml"), "envoyrls: NewConfig: domains[2] (file y.yaml): duplicate domain 'a', also domains[1]: invalid config"},
		{d("x.yaml"), d("y.yaml"), "y.yaml: duplicate domain 'a' in config file (also in x.yaml): envoyrls: invalid config"},
	} {
		_, err := NewConfig(&Domain{Name: "other"}, tc.a, tc.b)
		assert.EqualError(t, err, tc.says)
		assert.ErrorIs(t, err, ErrConfig)
	}
}
