module github.com/outboxhq/outbox/bench/peers

go 1.26

require github.com/posthog/posthog-go v1.5.2
