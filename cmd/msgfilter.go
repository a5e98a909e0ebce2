package cmd

import (
	"errors"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
)

// The filter flags of inbox and wait, and the wording of the mailbox
// operations' errors.

// msgFilter holds the filter flags (--sender, --type, --reply-to) as
// given; service.Filter is what they select.
type msgFilter struct {
	Sender  string
	Type    string
	ReplyTo string
}

func (fl msgFilter) filter() service.Filter {
	return service.Filter{Sender: fl.Sender, Type: mailbox.Type(fl.Type), ReplyTo: message.ID(fl.ReplyTo)}
}

func (fl msgFilter) empty() bool { return fl == (msgFilter{}) }

// String says what the filter waits for, for people.
func (fl msgFilter) String() string { return wire.FilterText(fl.filter()) }

// suffix is String after a space, or "" for no filter.
func (fl msgFilter) suffix() string {
	if fl.empty() {
		return ""
	}
	return " " + fl.String()
}

// check reports a filter no message can match as a usage error naming the
// flag (service.Filter.Check decides), and spells the sender the one way
// senders are stored.
func (fl *msgFilter) check() error {
	c, err := fl.filter().Check()
	if err != nil {
		return mailboxErr(err)
	}
	fl.Sender = c.Sender
	return nil
}

// filterFlags name the argument or flag that sets each field a
// service.FilterError names.
var filterFlags = map[string]string{"sender": "--sender", "type": "--type", "reply_to": "--reply-to", "id": "ID"}

// mailboxErr words the mailbox operations' errors for the command line:
// a bad filter or a missing team is bad usage (exit 2).
func mailboxErr(err error) error {
	var fe *service.FilterError
	if errors.As(err, &fe) {
		return usagef("%s %q: %v", filterFlags[fe.Field], fe.Value, fe.Err)
	}
	return teamError(err)
}
