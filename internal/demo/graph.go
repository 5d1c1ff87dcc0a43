package demo

import "encoding/json"

// Graph is the demo flow (React Flow JSON), its Worker nodes served by the
// demo worker at workerURL:
//
//	enrich ─► split ─► score (per contact) ─► collect ─► qualify ─► approve ─┬─ approve ─► handoff
//	   └──────────────────────────────────────────────────┘               └─ reject ──► nurture
//
// enrich moves the lead to Enriched, qualify to Qualified; approving "Send
// to sales?" makes it a customer (Customers) and takes the handoff branch,
// rejecting it moves it to Nurture and takes the nurture branch (the other
// branch is skipped).
func Graph(workerURL string) json.RawMessage {
	retry := map[string]any{"maxAttempts": 3, "backoff": "exponential", "initialDelayMs": 500, "maxDelayMs": 5000}
	node := func(id, typ string, x, y int, data map[string]any) map[string]any {
		return map[string]any{"id": id, "type": typ, "position": map[string]int{"x": x, "y": y}, "data": data}
	}
	move := func(section, as string) map[string]any {
		return map[string]any{"targetSectionId": section, "completeAs": as}
	}
	g := map[string]any{
		"nodes": []any{
			node("enrich", "Worker", 0, 100, map[string]any{
				"label": "Enrich lead", "webhookUrl": workerURL + "/enrich", "timeoutSeconds": 60, "retry": retry,
				"entityMovement": map[string]any{"onSuccess": move("enriched", "neutral")},
			}),
			node("split", "Splitter", 250, 220, map[string]any{"label": "Each contact", "arrayPath": "contacts"}),
			node("score", "Worker", 500, 220, map[string]any{
				"label": "Score contact", "webhookUrl": workerURL + "/score", "timeoutSeconds": 60, "retry": retry,
			}),
			node("collect", "Collector", 750, 220, map[string]any{"label": "All scores"}),
			node("qualify", "Worker", 1000, 100, map[string]any{
				"label": "Qualify", "webhookUrl": workerURL + "/qualify", "timeoutSeconds": 60, "retry": retry,
				"entityMovement": map[string]any{"onSuccess": move("qualified", "neutral")},
			}),
			node("approve", "UX", 1250, 100, map[string]any{
				"label":    "Send to sales?",
				"prompt":   "Send this lead to sales? Approve to make it a customer; reject to nurture it.",
				"outcomes": []string{"approve", "reject"},
				"entityMovement": map[string]any{
					"onOutcome": map[string]any{
						"approve": map[string]any{"targetSectionId": "customers", "completeAs": "success", "setEntityType": "customer"},
						"reject":  move("nurture", "neutral"),
					},
				},
			}),
			node("handoff", "Condition", 1500, 30, map[string]any{"label": "Hand to sales"}),
			node("nurture", "Condition", 1500, 170, map[string]any{"label": "Nurture"}),
		},
		"edges": []any{
			edge("enrich", "split", nil),
			edge("split", "score", nil),
			edge("score", "collect", nil),
			edge("collect", "qualify", map[string]string{"scores": "@this"}),
			edge("enrich", "qualify", map[string]string{"name": "name", "email": "email", "company": "company"}),
			edge("qualify", "approve", nil),
			outcomeEdge("approve", "handoff", "approve"),
			outcomeEdge("approve", "nurture", "reject"),
		},
	}
	b, err := json.Marshal(g)
	if err != nil {
		panic("demo: the graph does not encode: " + err.Error()) // constant data: a bug
	}
	return b
}

func edge(src, dst string, mapping map[string]string) map[string]any {
	e := map[string]any{"id": src + "-" + dst, "source": src, "target": dst}
	if mapping != nil {
		e["data"] = map[string]any{"mapping": mapping}
	}
	return e
}

func outcomeEdge(src, dst, outcome string) map[string]any {
	return map[string]any{"id": src + "-" + dst, "source": src, "target": dst, "data": map[string]any{"outcome": outcome}}
}
