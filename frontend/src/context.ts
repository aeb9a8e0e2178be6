// What every tab gets: the model, the request channel, the build's root class, and the
// explorer-wide actions (travel to a version, compare two versions, switch tab).
import type { AnyModel, Rpc } from './model';

export interface Ctx {
  model: AnyModel;
  rpc: Rpc;
  rootClass: string;
  /** show version `v` everywhere (the slider moves too) */
  travel(v: number): void;
  /** open the diff tab on `from` -> `to` */
  compare(from: number, to: number): void;
  /** switch to a tab */
  show(tab: string): void;
}

export interface Tab {
  el: HTMLElement;
  /** a trait this tab draws from changed (the tab updates its own parts in place) */
  changed(name: string): void;
  /** the tab became visible (charts measure their width then) */
  shown?(): void;
  destroy?(): void;
}

export const TABS: Array<[string, string]> = [
  ['overview', 'Overview'],
  ['history', 'History'],
  ['files', 'Files'],
  ['layout', 'Layout'],
  ['dv', 'Deletion vectors'],
  ['diff', 'Diff'],
  ['health', 'Log health'],
  ['maintenance', 'Maintenance'],
];
