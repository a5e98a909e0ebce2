package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/config"
)

func loadConfig(f *Factory, root *cobra.Command, g *globalFlags) (*config.Loaded, error) {
	cfg, err := config.Load(f.LookupEnv, "")
	if err != nil {
		return nil, err
	}
	// Socket flags first: setting one clears the other layer's opposite.
	for _, k := range config.Keys() {
		fl := root.PersistentFlags().Lookup(k.Flag)
		if fl == nil || !fl.Changed {
			continue
		}
		if err := cfg.Set(k.Key, *g.values[k.Key], config.FlagSource(k.Key)); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// detectSender is the upper-cased name in message ids: MSG_<SENDER>_<hex>.
func detectSender(ctx context.Context, f *Factory) (string, string, error) {
	id, err := f.Identity(ctx)
	if err != nil {
		return "", "", err
	}
	return id.Sender, id.Source, nil
}
