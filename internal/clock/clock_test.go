package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSystemSleep(t *testing.T) {
	var c Clock = System{}
	if err := c.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled sleep: %v", err)
	}
	if err := c.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("zero sleep on a done ctx: %v", err)
	}
	if err := c.Sleep(context.Background(), -time.Second); err != nil {
		t.Fatal(err)
	}
	if c.Now().IsZero() {
		t.Fatal("zero time")
	}
}
