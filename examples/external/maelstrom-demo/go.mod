module deliver

go 1.19

require github.com/jepsen-io/maelstrom/demo/go v0.0.0

replace github.com/jepsen-io/maelstrom/demo/go => ./maelstrom
