// A deliver handler on Maelstrom's own Go demo library (demo/go of jepsen-io/maelstrom, copied into ./maelstrom,
// unchanged): the lin-kv read-then-write dedupe. A plain Maelstrom node: no lethe_turns.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	maelstrom "github.com/jepsen-io/maelstrom/demo/go"
)

type delivery struct {
	Message   json.Number `json:"message"`
	Processor string      `json:"processor"`
	Attempt   json.Number `json:"attempt"`
}

func main() {
	n := maelstrom.NewNode()
	kv := maelstrom.NewLinKV(n)
	n.Handle("deliver", func(msg maelstrom.Message) error {
		var d delivery
		if err := json.Unmarshal(msg.Body, &d); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		key := fmt.Sprintf("%s/%s", d.Processor, d.Message)
		value, err := kv.Read(ctx, key)
		if err == nil {
			return n.Reply(msg, map[string]any{"type": "deliver_ok", "value": value})
		}
		var rpcErr *maelstrom.RPCError
		if !errors.As(err, &rpcErr) || rpcErr.Code != maelstrom.KeyDoesNotExist {
			return n.Reply(msg, map[string]any{"type": "error", "code": 11, "text": "read failed"})
		}
		effect, err := n.SyncRPC(ctx, "sink", map[string]any{"type": "effect", "message": d.Message,
			"processor": d.Processor, "attempt": d.Attempt})
		if err != nil || effect.Type() != "effect_ok" {
			return n.Reply(msg, map[string]any{"type": "error", "code": 11, "text": "effect failed"})
		}
		var body struct {
			Value any `json:"value"`
		}
		json.Unmarshal(effect.Body, &body)
		kv.Write(ctx, key, body.Value)
		return n.Reply(msg, map[string]any{"type": "deliver_ok", "value": body.Value})
	})
	if err := n.Run(); err != nil {
		log.Fatal(err)
	}
}
