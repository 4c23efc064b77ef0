package main

import (
	"fmt"
	"strconv"
	"time"
)

// payloadFunc makes event i of a run: a Segment track event of about 545 bytes whose
// messageId is "msg-" and i in idDigits digits (so the ingest load can patch it in place).
type payloadFunc func(i int) []byte

// The events look like real analytics traffic: trackTemplates templates (an event name, a
// page, a set of properties with their value kinds, a browser), each event filling its
// template with values drawn from its number: user, anonymous id, message id, timestamp,
// prices, quantities, ids, IP. A batch of 500 gzips (BestSpeed) about 7:1, where padding of
// repeated or random letters gave 11:1 or 40:1 and made gzip nearly free.
const trackTemplates = 1000

// trackBase is the timestamp of event 0; event i is i ms later.
var trackBase = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

var (
	eventNames = []string{
		"Product Viewed", "Product Added", "Product Removed", "Cart Viewed", "Checkout Started",
		"Checkout Step Viewed", "Checkout Step Completed", "Payment Info Entered", "Order Completed",
		"Order Updated", "Order Refunded", "Coupon Entered", "Coupon Applied", "Products Searched",
		"Product List Viewed", "Product List Filtered", "Promotion Viewed", "Promotion Clicked",
		"Product Clicked", "Product Shared", "Product Reviewed", "Wishlist Product Added",
		"Signed Up", "Signed In", "Signed Out", "Account Created", "Trial Started",
		"Subscription Started", "Plan Upgraded", "Invite Sent", "Video Playback Started",
		"Video Playback Completed", "Article Viewed", "Newsletter Subscribed", "Form Submitted",
		"Feature Used", "Report Exported", "Dashboard Viewed", "Settings Updated", "Search Performed",
	}
	categories = []string{"Games", "Books", "Electronics", "Garden", "Kitchen", "Toys", "Sports", "Music",
		"Outdoor", "Office", "Beauty", "Pets", "Automotive", "Health", "Baby", "Fashion"}
	brands = []string{"Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark", "Wayne", "Wonka",
		"Cyberdyne", "Soylent", "Tyrell", "Vandelay", "Oscorp", "Gringotts", "Aperture", "Monarch"}
	sources  = []string{"google", "newsletter", "facebook", "bing", "partner", "direct", "twitter", "linkedin"}
	locales  = []string{"en-US", "en-GB", "de-DE", "fr-FR", "es-ES", "pt-BR", "ja-JP", "nl-NL"}
	browsers = []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/131.0.0.0",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7_1) Safari/605.1.15",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) Mobile/15E148",
		"Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Firefox/132.0",
		"Mozilla/5.0 (Linux; Android 14; Pixel 8) Chrome/130.0.0.0 Mobile",
	}
)

// rng is splitmix64: a few values per event, deterministic in the event's number.
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// realTrack returns event i.
func realTrack(i int) []byte {
	t := i % trackTemplates
	tr := rng(uint64(t) * 7919) // the template: the same for every event of it
	name := eventNames[t%len(eventNames)]
	cat := categories[tr.intn(len(categories))]
	brand := brands[tr.intn(len(brands))]
	ua := browsers[tr.intn(len(browsers))]
	locale := locales[tr.intn(len(locales))]
	src := sources[tr.intn(len(sources))]
	page := fmt.Sprintf("/%s/%s-%d", lower(cat), lower(brand), t)

	r := rng(uint64(i)*0x2545f4914f6cdd1d + 1) // the event's own values
	b := make([]byte, 0, 640)
	b = append(b, `{"type":"track","event":"`...)
	b = append(b, name...)
	b = append(b, `","userId":"user-`...)
	b = strconv.AppendInt(b, int64(r.intn(200_000)), 10)
	b = append(b, `","anonymousId":"`...)
	b = appendHex(b, r.next(), 12)
	b = append(b, `","messageId":"msg-`...)
	b = append(b, fmt.Sprintf("%0*d", idDigits, i)...)
	b = append(b, `","timestamp":"`...)
	b = trackBase.Add(time.Duration(i)*time.Millisecond).AppendFormat(b, "2006-01-02T15:04:05.000Z")
	b = append(b, `","properties":{"product_id":"`...)
	b = appendHex(b, r.next(), 6)
	b = append(b, `","sku":"`...)
	b = strconv.AppendInt(b, int64(10000+t*7), 10)
	b = append(b, `","category":"`...)
	b = append(b, cat...)
	b = append(b, `","brand":"`...)
	b = append(b, brand...)
	b = append(b, `","price":`...)
	b = strconv.AppendFloat(b, float64(r.intn(20000))/100, 'f', 2, 64)
	b = append(b, `,"quantity":`...)
	b = strconv.AppendInt(b, int64(1+r.intn(5)), 10)
	b = append(b, `,"currency":"USD"},"context":{"library":{"name":"analytics-go","version":"3.3.0"},"ip":"`...)
	b = strconv.AppendInt(b, int64(10+t%200), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(t%256), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(r.intn(256)), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(r.intn(256)), 10)
	b = append(b, `","locale":"`...)
	b = append(b, locale...)
	b = append(b, `","page":{"path":"`...)
	b = append(b, page...)
	b = append(b, `"},"campaign":{"source":"`...)
	b = append(b, src...)
	b = append(b, `"},"userAgent":"`...)
	b = append(b, ua...)
	b = append(b, `"}}`...)
	return b
}

// appendHex appends the low n hex digits of v.
func appendHex(b []byte, v uint64, n int) []byte {
	const digits = "0123456789abcdef"
	for j := n - 1; j >= 0; j-- {
		b = append(b, digits[(v>>(4*uint(j)))&0xf])
	}
	return b
}

// lower is ASCII lower case.
func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
