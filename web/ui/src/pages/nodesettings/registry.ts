// The panels made for node types, by type: the panel, the data fields
// whose server messages it shows under them (the rest are shown at the
// top), and what it adds after the entity movement. A type without an
// entry is set up by its config schema's form (SchemaConfig).
import type { ComponentType } from "react";
import { EVENT_FIELDS, EventPanel } from "./EventPanel";
import { HTTP_FIELDS, HTTPPanel } from "./HTTPPanel";
import { RESPOND_FIELDS, RespondPanel } from "./RespondPanel";
import { COLLECTOR_FIELDS, CollectorPanel, SPLITTER_FIELDS, SplitterPanel } from "./SplitterPanel";
import { SUBFLOW_FIELDS, SubFlowPanel } from "./SubFlowPanel";
import { TransformPanel } from "./TransformPanel";
import { UXByOutcome, UXPanel } from "./UXPanel";
import { UX_PEOPLE_FIELDS } from "./UXPeople";
import { WaitPanel } from "./WaitPanel";
import { WorkerPanel } from "./WorkerPanel";
import type { PanelProps } from "./shared";

export interface NodePanel {
  Panel: ComponentType<PanelProps>;
  fields: string[];
  AfterMovement?: ComponentType<PanelProps>;
}

export const PANELS: Record<string, NodePanel> = {
  Worker: { Panel: WorkerPanel, fields: [] },
  HTTP: { Panel: HTTPPanel, fields: HTTP_FIELDS },
  Event: { Panel: EventPanel, fields: EVENT_FIELDS },
  Respond: { Panel: RespondPanel, fields: RESPOND_FIELDS },
  SubFlow: { Panel: SubFlowPanel, fields: SUBFLOW_FIELDS },
  UX: { Panel: UXPanel, fields: ["timeoutSeconds", "onTimeout", ...UX_PEOPLE_FIELDS], AfterMovement: UXByOutcome },
  Transform: { Panel: TransformPanel, fields: ["expression"] },
  Wait: { Panel: WaitPanel, fields: ["duration", "until", "timezone"] },
  Splitter: { Panel: SplitterPanel, fields: SPLITTER_FIELDS },
  Collector: { Panel: CollectorPanel, fields: COLLECTOR_FIELDS },
};

// panelFor is the panel made for type (as the canvas spells it), if any.
export function panelFor(type: string): NodePanel | undefined {
  return Object.hasOwn(PANELS, type) ? PANELS[type] : undefined;
}
