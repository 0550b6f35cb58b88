/**
 * The course's Exercises panel, in JupyterLab's left sidebar.
 *
 * It lists the course's exercises and where each stands (not started, checked with the public score, handed
 * in: when and which copy counts, returned with the score), and has three buttons: Check (`course check`),
 * Hand in (`course submit`: the file as saved; an open notebook with unsaved changes is said so, with an offer
 * to save first) and Open feedback (`course feedback`, then the page opens in Lab). Every button asks the
 * course's Jupyter server extension (src/course_tools/lab_panel/), which runs the `course` command itself:
 * the panel holds no course logic of its own. The routes and states mirror course_tools/lab_panel/protocol.py.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { ServerConnection } from '@jupyterlab/services';
import { checkIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

const NAMESPACE = 'course-panel';
const PANEL_ID = 'course-exercises';
const STUDENT_KEY = 'compile-course:student-id';
const POLL_MS = 1000;

interface IExercise {
  name: string;
  title: string;
  path: string | null;
  status: string;
  lines: string[];
  problem: string;
  feedback: boolean;
}

interface IListing {
  mode: 'hub' | 'local';
  course: string;
  problem: string;
  exercises: IExercise[];
}

interface IJob {
  id: string;
  action: 'check' | 'handin' | 'feedback';
  exercise: string;
  command: string;
  state: 'running' | 'done' | 'failed';
  rc: number | null;
  output: string;
  open: string | null;
}

/** A request to the course's server extension: the server's token and XSRF cookie go with it. */
async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, NAMESPACE, path);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new Error(`the Jupyter server did not answer (${error})`);
  }
  const text = await response.text();
  let data: any = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const said = (data && (data.message || data.reason)) || text || response.statusText;
    throw new Error(`${said} (HTTP ${response.status})`);
  }
  return data as T;
}

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  text = ''
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text) {
    node.textContent = text;
  }
  return node;
}

class ExercisesPanel extends Widget {
  constructor(
    private app: JupyterFrontEnd,
    private docManager: IDocumentManager
  ) {
    super();
    this.id = PANEL_ID;
    this.addClass('cc-ExercisesPanel');
    this.title.icon = checkIcon;
    this.title.caption = 'Exercises';
  }

  protected onAfterShow(): void {
    void this.refresh();
  }

  get student(): string {
    return window.localStorage.getItem(STUDENT_KEY) || '';
  }

  async refresh(): Promise<void> {
    const query = this.student ? `?student=${encodeURIComponent(this.student)}` : '';
    try {
      this.listing = await api<IListing>(`exercises${query}`);
      this.failure = '';
    } catch (error) {
      this.failure = `The course's server extension could not list the exercises: ${(error as Error).message}`;
    }
    this.render();
  }

  /** The open notebook's context, when Lab has this path open. */
  private contextOf(path: string | null) {
    const widget = path ? this.docManager.findWidget(path) : undefined;
    return widget ? this.docManager.contextForWidget(widget) : undefined;
  }

  /** Whether to go on with a command that reads the SAVED file; saves first when the student asks. */
  private async savedFirst(ex: IExercise, verb: string): Promise<boolean> {
    const context = this.contextOf(ex.path);
    if (!context || !context.model.dirty) {
      return true;
    }
    const saveFirst = `Save, then ${verb}`;
    const asSaved = `${verb[0].toUpperCase()}${verb.slice(1)} the saved file`;
    const result = await showDialog({
      title: `${ex.name} has unsaved changes`,
      body:
        `The notebook open in Lab has changes that are not saved. ${verb[0].toUpperCase()}${verb.slice(1)} ` +
        'takes the file as saved on disk: what you typed since the last save is not in it.',
      buttons: [
        Dialog.cancelButton(),
        Dialog.warnButton({ label: asSaved }),
        Dialog.okButton({ label: saveFirst })
      ]
    });
    if (!result.button.accept) {
      return false;
    }
    if (result.button.label === saveFirst) {
      await context.save();
    }
    return true;
  }

  private async act(ex: IExercise, action: 'check' | 'handin'): Promise<void> {
    const verb = action === 'check' ? 'check' : 'hand in';
    if (!(await this.savedFirst(ex, verb))) {
      return;
    }
    let body = {};
    if (action === 'handin' && this.listing?.mode === 'local') {
      if (!this.student) {
        this.notes.set(ex.name, 'Type your student id above first (the one your instructor gave you).');
        this.render();
        return;
      }
      body = { student: this.student };
    }
    await this.run(ex.name, `exercises/${ex.name}/${action}`, body);
  }

  private async run(key: string, route: string, body: object): Promise<void> {
    this.notes.delete(key);
    let job: IJob;
    try {
      job = await api<IJob>(route, { method: 'POST', body: JSON.stringify(body) });
    } catch (error) {
      this.notes.set(key, (error as Error).message);
      this.render();
      return;
    }
    this.jobs.set(key, job);
    this.render();
    while (job.state === 'running') {
      await new Promise(resolve => setTimeout(resolve, POLL_MS));
      try {
        job = await api<IJob>(`jobs/${job.id}`);
      } catch (error) {
        this.notes.set(key, `lost track of \`${job.command}\`: ${(error as Error).message}`);
        break;
      }
      this.jobs.set(key, job);
      this.showOutput(key, job);
    }
    if (job.state === 'done' && job.open) {
      await this.app.commands.execute('docmanager:open', { path: job.open });
    }
    await this.refresh();
  }

  /** Update a running job's output in place (no re-render: the student may be scrolling it). */
  private showOutput(key: string, job: IJob): void {
    const pre = this.node.querySelector(`pre.cc-output[data-key="${key}"]`) as HTMLPreElement | null;
    if (pre) {
      this.fillOutput(pre, job);
    } else {
      this.render();
    }
  }

  private fillOutput(pre: HTMLPreElement, job: IJob): void {
    const status =
      job.state === 'running' ? '(running...)' : `(exit status ${job.rc}${job.state === 'done' ? ', ok' : ''})`;
    pre.dataset.state = job.state;
    pre.textContent = `$ ${job.command}  ${status}\n${job.output}`;
    pre.scrollTop = pre.scrollHeight;
  }

  private outputFor(key: string, parent: HTMLElement): void {
    const note = this.notes.get(key);
    if (note) {
      parent.appendChild(element('div', 'cc-problem', note));
    }
    const job = this.jobs.get(key);
    if (job) {
      const pre = element('pre', 'cc-output');
      pre.dataset.key = key;
      this.fillOutput(pre, job);
      parent.appendChild(pre);
    }
  }

  private button(label: string, onClick: () => void, disabled = false): HTMLButtonElement {
    const button = element('button', 'jp-Button jp-mod-styled jp-mod-reject', label);
    button.disabled = disabled;
    button.addEventListener('click', onClick);
    return button;
  }

  private render(): void {
    const root = this.node;
    root.textContent = '';
    root.appendChild(element('h2', '', 'Exercises'));
    const top = element('div', 'cc-top');
    top.appendChild(this.button('Refresh', () => void this.refresh()));
    root.appendChild(top);
    if (this.failure) {
      root.appendChild(element('div', 'cc-problem', this.failure));
    }
    const listing = this.listing;
    if (!listing) {
      return;
    }
    if (listing.mode === 'hub') {
      top.appendChild(
        element('span', 'cc-line', `On the class's hub: hand-ins go to the exchange of course ${listing.course || '?'}.`)
      );
    } else {
      const label = element('label', 'cc-line', 'Your student id: ');
      const input = element('input', 'cc-student');
      input.value = this.student;
      input.placeholder = 'as your instructor gave it';
      input.addEventListener('change', () => {
        window.localStorage.setItem(STUDENT_KEY, input.value.trim());
        void this.refresh();
      });
      label.appendChild(input);
      top.appendChild(label);
      top.appendChild(element('span', 'cc-line', 'No hub: Hand in writes the hand-in file (course submit --student ID).'));
    }
    if (listing.problem) {
      root.appendChild(element('div', 'cc-problem', listing.problem));
    }
    for (const ex of listing.exercises) {
      const card = element('div', 'cc-exercise');
      card.dataset.exercise = ex.name;
      const head = element('div');
      const title = element('a', 'cc-title', `${ex.name}: ${ex.title}`);
      title.href = '#';
      title.addEventListener('click', event => {
        event.preventDefault();
        if (ex.path) {
          void this.app.commands.execute('docmanager:open', { path: ex.path });
        }
      });
      head.appendChild(title);
      const badge = element('span', 'cc-status', ex.status);
      badge.dataset.status = ex.status;
      head.appendChild(badge);
      card.appendChild(head);
      for (const line of ex.lines) {
        card.appendChild(element('div', 'cc-line', line));
      }
      if (ex.problem) {
        card.appendChild(element('div', 'cc-problem', ex.problem));
      }
      if (this.contextOf(ex.path)?.model.dirty) {
        card.appendChild(
          element('div', 'cc-problem', 'Unsaved changes in Lab: Check and Hand in take the file as saved.')
        );
      }
      const busy = this.jobs.get(ex.name)?.state === 'running';
      const buttons = element('div', 'cc-buttons');
      const missing = ex.status === 'missing';
      buttons.appendChild(this.button('Check', () => void this.act(ex, 'check'), busy || missing));
      buttons.appendChild(this.button('Hand in', () => void this.act(ex, 'handin'), busy || missing));
      if (listing.mode === 'hub') {
        buttons.appendChild(
          this.button(
            'Open feedback',
            () => void this.run(ex.name, 'feedback', { exercise: ex.name }),
            busy || !ex.feedback
          )
        );
      }
      card.appendChild(buttons);
      this.outputFor(ex.name, card);
      root.appendChild(card);
    }
  }

  private listing: IListing | null = null;
  private failure = '';
  private jobs = new Map<string, IJob>();
  private notes = new Map<string, string>();
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'compile-course-exercises:panel',
  description: "The course's Exercises panel: check, hand in, open feedback",
  autoStart: true,
  requires: [IDocumentManager],
  optional: [ILayoutRestorer],
  activate: (app: JupyterFrontEnd, docManager: IDocumentManager, restorer: ILayoutRestorer | null) => {
    const panel = new ExercisesPanel(app, docManager);
    app.shell.add(panel, 'left', { rank: 600 });
    if (restorer) {
      restorer.add(panel, PANEL_ID);
    }
    app.commands.addCommand('course-exercises:show', {
      label: 'Show the Exercises panel',
      execute: () => app.shell.activateById(PANEL_ID)
    });
  }
};

export default plugin;
