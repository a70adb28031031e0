package nodeslots

import (
	"sync"
	"testing"
)

func TestSlots(t *testing.T) {
	var s Slots[int]
	if s.Get("n1") != nil {
		t.Fatal("empty slots returned a value")
	}
	one, two := 1, 2
	s.Set("n1", &one)
	s.Set("n2", &two)
	s.Set("n1", &two)
	if got := s.Get("n1"); got == nil || *got != 2 {
		t.Errorf("n1 = %v, want 2", got)
	}
	s.Set("n2", nil)
	n := 0
	s.Range(func(string, *int) { n++ })
	if n != 1 {
		t.Errorf("Range saw %d nodes with values, want 1 (n2 was cleared)", n)
	}
	s.Delete("n1")
	if s.Get("n1") != nil {
		t.Error("deleted node still has a value")
	}
}

// Readers run while a writer adds nodes and swaps values (go test -race).
func TestSlotsConcurrentReaders(t *testing.T) {
	var s Slots[int]
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					if v := s.Get("n7"); v != nil && *v < 0 {
						t.Error("negative value")
					}
				}
			}
		}()
	}
	for i := 0; i < 1000; i++ {
		v := i
		s.Set([]string{"n1", "n7", "n9"}[i%3], &v)
		if i%100 == 0 {
			s.Delete("n9")
		}
	}
	close(stop)
	wg.Wait()
	if got := s.Get("n7"); got == nil || *got != 997 {
		t.Errorf("n7 = %v, want 997", got)
	}
}
