import { BaseEdge, type EdgeProps } from "@xyflow/react";
import { memo } from "react";

// LoopEdge draws a loop's back edge: out of its source's right handle, up
// in an arc over the steps of the loop and down into its head's left
// handle, so it never runs through them as a plain edge going back would.
export const LoopEdge = memo(function LoopEdge(props: EdgeProps) {
  const { sourceX: sx, sourceY: sy, targetX: tx, targetY: ty } = props;
  const reach = Math.max(60, Math.min(140, Math.abs(sx - tx) * 0.2));
  const lift = 110 + Math.min(120, Math.abs(sx - tx) * 0.12);
  const top = Math.min(sy, ty) - lift;
  // Two cubic curves: up from the source to the arc's top, down to the head.
  const mx = (sx + tx) / 2;
  const path = `M ${sx} ${sy} C ${sx + reach} ${sy}, ${sx + reach} ${top}, ${mx} ${top} C ${tx - reach} ${top}, ${tx - reach} ${ty}, ${tx} ${ty}`;
  return (
    <BaseEdge
      id={props.id}
      path={path}
      markerEnd={props.markerEnd}
      markerStart={props.markerStart}
      style={props.style}
      label={props.label}
      labelX={mx}
      labelY={top}
      labelStyle={props.labelStyle}
      labelShowBg={props.labelShowBg}
      labelBgStyle={props.labelBgStyle}
      labelBgPadding={props.labelBgPadding}
      labelBgBorderRadius={props.labelBgBorderRadius}
      interactionWidth={props.interactionWidth}
    />
  );
});

export const edgeTypes = { loop: LoopEdge };
