package devchain

import (
	"log/slog"
	"os"
	"testing"

	"github.com/ethereum/go-ethereum/log"
)

func TestMain(m *testing.M) {
	log.SetDefault(log.NewLogger(log.NewTerminalHandlerWithLevel(os.Stderr, slog.LevelError, false)))
	os.Exit(m.Run())
}
